import Netlink

/// Everything the classifier weighs for one link: its rtnetlink facts and its sysfs facts.
///
/// ``LinkClassifier/classify(_:)`` is a pure function of these values, so a link can be
/// classified (and tested) without the hardware: build the facts by hand, from a fixture, or
/// from a live `Link` and a ``SysfsReader``.
package struct LinkFacts: Sendable, Hashable {
    /// The interface index.
    package var index: Int32
    /// The interface name.
    package var name: String
    /// The link-layer type (`ARPHRD_*`).
    package var arphrdType: ARPHRDType
    /// The rtnetlink kind (`IFLA_INFO_KIND`), such as `veth`, `bridge`, `wwan`; `nil` when the
    /// driver registers none (most physical NICs and Wi-Fi cards).
    package var kind: String?
    /// The interface flags that describe what the link is: `pointToPoint`, `noARP`, `loopback`,
    /// `master`, `slave`. (``init(link:sysfs:)`` leaves out state flags such as `up` and
    /// `running`, so that a link going up or down is not a change of facts.)
    package var flags: InterfaceFlags
    /// The index of the link this one is a port of: a bridge, bond, VRF or batman-adv mesh
    /// interface.
    package var masterIndex: Int32?
    /// The index of the lower link (`IFLA_LINK`) in this namespace: the parent of a VLAN or
    /// macvlan, the modem link under rmnet. `nil` when it is absent or in another namespace.
    package var lowerLinkIndex: Int32?
    /// The sysfs facts; ``SysfsFacts/absent`` when sysfs was not read.
    package var sysfs: SysfsFacts
    /// The link's alternative names (`Link.alternativeNames`), which a
    /// ``ConstrainedLinkPolicy`` name rule matches as it matches the name.
    package var alternativeNames: [String]

    /// Facts as given.
    package init(index: Int32, name: String, arphrdType: ARPHRDType, kind: String? = nil,
                flags: InterfaceFlags = [], masterIndex: Int32? = nil, lowerLinkIndex: Int32? = nil,
                sysfs: SysfsFacts = .absent, alternativeNames: [String] = []) {
        self.index = index
        self.name = name
        self.arphrdType = arphrdType
        self.kind = kind
        self.flags = flags
        self.masterIndex = masterIndex
        self.lowerLinkIndex = lowerLinkIndex
        self.sysfs = sysfs
        self.alternativeNames = alternativeNames
    }

    /// The facts of a live link. A lower link in another namespace (the peer of a veth that was
    /// moved, say) is dropped: its index means nothing here.
    package init(link: Link, sysfs: SysfsFacts = .absent) {
        self.init(index: link.index, name: link.name, arphrdType: link.arphrdType, kind: link.kind,
                  flags: Self.describingFlags(of: link), masterIndex: link.masterIndex,
                  lowerLinkIndex: Self.lowerLinkIndex(of: link), sysfs: sysfs,
                  alternativeNames: link.alternativeNames)
    }

    /// What a live link's flags say it is (``describingFlags``).
    static func describingFlags(of link: Link) -> InterfaceFlags { link.flags.intersection(describingFlags) }

    /// A live link's lower link in this namespace: `nil` when it is in another.
    static func lowerLinkIndex(of link: Link) -> Int32? { link.linkNamespaceID == nil ? link.lowerLinkIndex : nil }

    /// The rtnetlink facts of a live link, without its sysfs facts: what the classification
    /// cache compares on every evaluation round to see that no link changed what it is.
    ///
    /// `LinkFacts(link: link, sysfs: kept.sysfs) == kept` says the same, but builds and destroys
    /// a whole `LinkFacts` (its sysfs facts' strings and arrays retained and released) for each
    /// link. A name fits in 15 bytes (`IFNAMSIZ`) and a kind is a short word, so both are small
    /// strings held inline: comparing keys touches no reference count.
    struct RtnetlinkKey {
        var index: Int32
        var name: String
        var arphrdType: ARPHRDType
        var kind: String?
        var flags: InterfaceFlags
        var masterIndex: Int32?
        var lowerLinkIndex: Int32?
        /// Empty for most links: the empty array, compared without touching a reference count.
        var alternativeNames: [String]

        /// Whether `link` has these rtnetlink facts, as ``LinkFacts/init(link:sysfs:)`` reads
        /// them. Field by field on concrete types: an `Optional<RtnetlinkKey>` compared with `==`
        /// went through generic value witnesses, at about 1 300 instructions a link.
        func matches(_ link: Link) -> Bool {
            index == link.index && arphrdType == link.arphrdType && masterIndex == link.masterIndex
                && flags == LinkFacts.describingFlags(of: link) && lowerLinkIndex == LinkFacts.lowerLinkIndex(of: link)
                && name == link.name && kind == link.kind && alternativeNames == link.alternativeNames
        }

        /// The key of facts: the key of any link whose facts these are.
        init(_ facts: LinkFacts) {
            index = facts.index
            name = facts.name
            arphrdType = facts.arphrdType
            kind = facts.kind
            flags = facts.flags
            masterIndex = facts.masterIndex
            lowerLinkIndex = facts.lowerLinkIndex
            alternativeNames = facts.alternativeNames
        }
    }

    /// The flags that say what a link is, as opposed to what state it is in.
    package static let describingFlags: InterfaceFlags = [.pointToPoint, .noARP, .loopback, .master, .slave]

    /// What the sysfs facts depend on: a link keeps its sysfs facts until one of these changes.
    struct SysfsKey: Hashable {
        var name: String
        var kind: String?
        var masterIndex: Int32?
        var arphrdType: ARPHRDType
    }
}
