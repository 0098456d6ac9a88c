/// The IP configuration of a link, or of the namespace, as the kernel's netconf reports it
/// (`RTM_NEWNETCONF`; `net.ipv4.conf.*` and `net.ipv6.conf.*`).
///
/// The kernel sends one when a sysctl that routing depends on changes, so a subscription
/// follows them at once: ``ignoresRoutesWithLinkdown`` decides whether a route through a link
/// without carrier is still taken. A value holds what the kernel reported; a field is nil when
/// the kernel did not report it for this family.
public struct InterfaceConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// The address family (`net.ipv4` or `net.ipv6`).
    public var family: AddressFamily
    /// Which configuration this is: one link's, or the namespace-wide `all` or `default`.
    public var scope: ConfigurationScope
    /// Whether packets are forwarded (`forwarding`).
    public var forwarding: Bool?
    /// Reverse-path filtering (`rp_filter`): 0 off, 1 strict, 2 loose (IPv4 only).
    public var reversePathFilter: Int32?
    /// Whether routes through a link without carrier are passed over by lookups
    /// (`ignore_routes_with_linkdown`). For a link, the kernel uses the link's value or the
    /// `all` value, whichever is set.
    public var ignoresRoutesWithLinkdown: Bool?
    /// Whether the link answers neighbour solicitations for others (`proxy_arp`, `proxy_ndp`).
    public var proxiesNeighbors: Bool?

    /// Creates a configuration value. The library fills these from the kernel.
    public init(family: AddressFamily, scope: ConfigurationScope, forwarding: Bool? = nil,
                reversePathFilter: Int32? = nil, ignoresRoutesWithLinkdown: Bool? = nil,
                proxiesNeighbors: Bool? = nil) {
        self.family = family
        self.scope = scope
        self.forwarding = forwarding
        self.reversePathFilter = reversePathFilter
        self.ignoresRoutesWithLinkdown = ignoresRoutesWithLinkdown
        self.proxiesNeighbors = proxiesNeighbors
    }

    /// Takes the values this one lacks from `earlier`, a previous version of it.
    mutating func keepValues(of earlier: InterfaceConfiguration?) {
        guard let earlier, earlier.key == key else { return }
        forwarding = forwarding ?? earlier.forwarding
        reversePathFilter = reversePathFilter ?? earlier.reversePathFilter
        ignoresRoutesWithLinkdown = ignoresRoutesWithLinkdown ?? earlier.ignoresRoutesWithLinkdown
        proxiesNeighbors = proxiesNeighbors ?? earlier.proxiesNeighbors
    }

    /// What identifies a configuration: its family and scope.
    public var key: Key { Key(family: family, scope: scope) }

    /// The identity of a configuration.
    public struct Key: Sendable, Hashable {
        /// The address family.
        public var family: AddressFamily
        /// The link, or the namespace-wide configuration.
        public var scope: ConfigurationScope

        /// Creates the key of the configuration of `family` for `scope`.
        public init(family: AddressFamily, scope: ConfigurationScope) {
            self.family = family
            self.scope = scope
        }
    }

    public var description: String {
        var parts = ["\(family) \(scope)"]
        if let forwarding { parts.append("forwarding \(forwarding ? 1 : 0)") }
        if let reversePathFilter { parts.append("rp_filter \(reversePathFilter)") }
        if let ignoresRoutesWithLinkdown { parts.append("ignore_routes_with_linkdown \(ignoresRoutesWithLinkdown ? 1 : 0)") }
        if let proxiesNeighbors { parts.append("proxy \(proxiesNeighbors ? 1 : 0)") }
        return parts.joined(separator: " ")
    }
}

/// Which IP configuration a netconf value describes.
public enum ConfigurationScope: Sendable, Hashable, CustomStringConvertible {
    /// The namespace-wide `all` values, which apply to every link where the kernel combines
    /// them with the link's own.
    case allLinks
    /// The `default` values, which new links start with.
    case newLinks
    /// One link's values, by its index.
    case link(Int32)

    public var description: String {
        switch self {
        case .allLinks: return "all"
        case .newLinks: return "default"
        case .link(let index): return "link \(index)"
        }
    }
}
