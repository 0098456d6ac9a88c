import Netlink

/// What a reachability question is about.
public enum ReachabilityTarget: Sendable, Hashable, CustomStringConvertible {
    /// "The internet": a default route through a usable link, IPv4 or IPv6.
    case internet
    /// One IPv4 or IPv6 address. The unspecified address (`0.0.0.0`, `::`) is judged as
    /// ``internet``, as Apple's zero address is; an IPv4-mapped IPv6 address
    /// (`::ffff:192.0.2.1`) as the IPv4 address inside it, which a dual-stack socket sends to
    /// over IPv4 (answers name that address).
    case address(IPAddress)
    /// A host name, resolved by a ``HostResolver``.
    case host(String)
    /// A remote address reached from a local one (the kernel's lookup with a source address,
    /// so source-based policy rules apply).
    ///
    /// Kept out of line (`indirect`): two addresses inline would make every target 41 bytes,
    /// past the three words an `Any` holds without a box of its own, and every notification's
    /// userInfo holds the monitor's target.
    indirect case addressPair(local: IPAddress, remote: IPAddress)
    /// An IPv6 address with a link (`fe80::1%eth0`, `ff02::1%eth0`, `2001:db8::1%eth0`), as
    /// `getaddrinfo` reads it into a socket's `sin6_scope_id`. For an address that needs a link
    /// (link-local unicast, and multicast of interface-local or link-local scope: the kernel's
    /// `__ipv6_addr_needs_scope_id`) the kernel's lookup goes through that link; for any other
    /// `connect(2)` ignores the scope, and so does the answer, once the link exists
    /// (`getaddrinfo` refuses a scope that names no link). `interface` is the link's name or one of its
    /// alternative names (`ip link property add dev eth0 altname enp0s31f6`; a link's name wins
    /// over another's alternative name), or its index in decimal when no link has that name; a
    /// link that is missing is answered as such, and the answer follows the link when it comes
    /// back, or when a link is given that name. glibc's `getaddrinfo` and `if_nametoindex`
    /// take names of up to 15 bytes, so a longer alternative name (up to 127) names the link
    /// here and for `ip`, but not in a socket program's `fe80::1%name`. An address that needs a
    /// link and has none is not reachable (``UnreachableReason/scopeRequired``): a socket cannot
    /// send to it.
    indirect case scopedAddress(IPAddress, interface: String)

    /// Parses a command-line or configuration target: an IPv4 or IPv6 literal is an address,
    /// anything else must be a valid host name (RFC 1123 labels, at most 253 bytes) that does not
    /// read as a number: no all-digit last label (`999.1.1.1`), and not `inet_aton`'s shorthand
    /// for an IPv4 address (`127.1`, `010.0.0.1`, `0x7f.1`), which the resolver would take as one.
    /// An IPv6 literal may carry its link after a `%` (`fe80::1%eth0`, `fe80::1%2`), as
    /// `getaddrinfo` takes it: a ``scopedAddress(_:interface:)``. IPv4 literals may not.
    /// - Throws: ``ReachabilityError/invalidTarget(_:)`` for empty or malformed text.
    public init(parsing text: String) throws(ReachabilityError) {
        if let address = IPAddress(text) { self = .address(address); return }
        if let percent = text.utf8.firstIndex(of: UInt8(ascii: "%")) {
            let scope = String(text[text.index(after: percent)...])
            guard let address = IPAddress(String(text[..<percent])), address.family == .ipv6,
                  Self.isValidInterfaceName(scope) else { throw .invalidTarget(text) }
            self = .scopedAddress(address, interface: scope)
            return
        }
        guard Self.isValidHostName(text) else { throw .invalidTarget(text) }
        self = .host(text.hasSuffix(".") ? String(text.dropLast()) : text)
    }

    /// The target as the library judges it: the unspecified address (`0.0.0.0` or `::`), which
    /// Apple's `SCNetworkReachabilityCreateWithAddress` and Reachability.swift's `zeroAddress`
    /// use to mean "the internet", is ``internet``. A route lookup for it would find the local
    /// route (the kernel takes `0.0.0.0` as this host) and answer "reachable" even offline.
    /// An IPv4-mapped IPv6 address is the IPv4 address inside it: a dual-stack socket sends to
    /// `::ffff:192.0.2.1` over IPv4, where the kernel's IPv6 table has no route for it.
    var judged: ReachabilityTarget {
        switch self {
        case .address(let address):
            let unmapped = address.unmapped
            if unmapped.isUnspecified { return .internet }
            return unmapped == address ? self : .address(unmapped)
        case .addressPair(let local, let remote) where local.unmapped != local || remote.unmapped != remote:
            return .addressPair(local: local.unmapped, remote: remote.unmapped)
        default:
            return self
        }
    }

    /// `internet`, an address, a host name, or `local -> remote`.
    public var description: String {
        switch self {
        case .internet: return "internet"
        case .address(let address): return address.description
        case .host(let name): return name
        case .addressPair(let local, let remote): return "\(local) -> \(remote)"
        case .scopedAddress(let address, let interface): return "\(address)%\(interface)"
        }
    }

    /// Whether `name` can name a Linux link (the kernel's `dev_valid_name`): not `.` or `..`,
    /// without `/`, `:` or white space, and without `%` (which the kernel takes as the `%d` of a
    /// name to number); printable ASCII here. 1 to 127 bytes: a link's name has at most 15
    /// (`IFNAMSIZ`), one of its alternative names at most 127 (`ALTIFNAMSIZ`), and udev gives
    /// the longer predictable names only as alternative names. The kernel does not hold
    /// alternative names to `dev_valid_name` (it takes `a:b`, `.` or `x%d`): such a name is no
    /// scope here, and the link's index is.
    static func isValidInterfaceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...Link.longestAlternativeName).contains(bytes.count), name != ".", name != ".." else { return false }
        return bytes.allSatisfy { byte in
            byte > 0x20 && byte < 0x7f && byte != UInt8(ascii: "/") && byte != UInt8(ascii: ":") && byte != UInt8(ascii: "%")
        }
    }

    /// Whether `name` is a host name: dot-separated labels of 1 to 63 letters, digits, hyphens
    /// (not at either end) and underscores, 253 bytes at most, one trailing dot allowed; and not
    /// a number. A name whose last label is all digits, or whose labels (four at most) are all
    /// C numbers (decimal, octal `0...`, hexadecimal `0x...`), is refused: the system resolver
    /// reads those as IPv4 addresses in `inet_aton`'s shorthand (`127.1` is 127.0.0.1, `010.0.0.1`
    /// is 8.0.0.1, `0x7f.1` is 127.0.0.1) or, out of range (`999.1.1.1`), asks the name servers
    /// for a name no zone can hold (a top-level label is never all digits, RFC 3696 section 2).
    static func isValidHostName(_ name: String) -> Bool {
        var text = Substring(name)
        if text.hasSuffix(".") { text = text.dropLast() }
        guard !text.isEmpty, text.utf8.count <= 253 else { return false }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        if let last = labels.last, last.utf8.allSatisfy(isDigit) { return false }
        if labels.count <= 4, labels.allSatisfy(isCNumber) { return false }
        return labels.allSatisfy { label in
            let bytes = Array(label.utf8)
            guard (1...63).contains(bytes.count), bytes.first != UInt8(ascii: "-"), bytes.last != UInt8(ascii: "-") else { return false }
            return bytes.allSatisfy { byte in
                isDigit(byte) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    /// A number as `inet_aton` reads one part: decimal or octal digits, or `0x` and hex digits.
    private static func isCNumber(_ label: Substring) -> Bool {
        let bytes = Array(label.utf8)
        if bytes.count >= 2, bytes[0] == UInt8(ascii: "0"), bytes[1] | 0x20 == UInt8(ascii: "x") {
            return bytes.dropFirst(2).allSatisfy { isDigit($0) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) }
        }
        return !bytes.isEmpty && bytes.allSatisfy(isDigit)
    }
}

/// Errors of the reachability layer.
public enum ReachabilityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The text is neither an IP address nor a valid host name.
    case invalidTarget(String)
    /// Name resolution failed (`getaddrinfo`'s message, or the resolver's).
    case resolutionFailed(host: String, message: String)
    /// A kernel or namespace error.
    case netlink(NetlinkError)

    /// One line.
    public var description: String {
        switch self {
        case .invalidTarget(let text):
            // At most 80 Unicode scalars (one character can hold thousands); control characters
            // (C0, DEL, C1) and line separators shown as `?`, so that this stays one line.
            let shown = text.unicodeScalars.prefix(80).map { $0.breaksALine ? "?" : String($0) }.joined()
                + (text.unicodeScalars.count > 80 ? "…" : "")
            return "not an IP address or host name: \"\(shown)\""
        case .resolutionFailed(let host, let message): return "cannot resolve \(host): \(message)"
        case .netlink(let error): return error.description
        }
    }
}

extension ReachabilityTarget {
    /// Whether the target is a host name (answered from the addresses it resolves to).
    var isHost: Bool {
        if case .host = self { return true }
        return false
    }
}

extension IPAddress {
    /// Whether a socket reaches this address only through a given link (its `sin6_scope_id`):
    /// an IPv6 link-local address (`fe80::/10`). See ``ReachabilityTarget/scopedAddress(_:interface:)``.
    var needsScope: Bool {
        guard case .v6(let v6) = self else { return false }
        // Multicast (ff00::/8) of interface-local (ff?1) or link-local (ff?2) scope.
        let multicastScope = v6.high >> 56 == 0xff ? (v6.high >> 48) & 0xf : nil
        return v6.isLinkLocal || multicastScope == 1 || multicastScope == 2
    }
}
