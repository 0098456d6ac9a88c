/// What a link is, finer than ``InterfaceType``: the technology or the virtual device behind it.
///
/// Each kind has a default interface type. Stacked kinds (``vlan``, ``macvlan``, ``bridge``,
/// ``bond``) report ``InterfaceType/other`` here; the classifier gives them the type of their
/// lower links or ports when those agree (see <doc:ClassifyingLinks>).
public enum LinkKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A wired Ethernet NIC or USB Ethernet adapter, including USB tethering to a phone.
    case ethernet
    /// A Wi-Fi (IEEE 802.11) link, in any mode, monitor mode included.
    case wifi
    /// A cellular modem's data link: the kernel's WWAN framework, a USB modem (qmi_wwan,
    /// cdc_mbim, ...), a Qualcomm rmnet or raw-IP link.
    case wwan
    /// The loopback link.
    case loopback
    /// A PPP link (dial-up, PPPoE, PPTP/L2TP, or a modem driven by pppd).
    case ppp
    /// A TUN/TAP device, as OpenVPN, other user-space VPNs and emulators create; also OpenVPN's
    /// data channel in the kernel (`ovpn` since Linux 6.16, `ovpn-dco` out of tree).
    case tun
    /// A WireGuard tunnel.
    case wireguard
    /// A kernel IP tunnel: ipip, sit, GRE, ip6tnl, VTI, XFRM and their relatives.
    case tunnel
    /// An overlay network endpoint: VXLAN, Geneve, bare UDP.
    case overlay
    /// An Ethernet bridge (Linux bridge or Open vSwitch).
    case bridge
    /// A bond or team of links.
    case bond
    /// An 802.1Q / 802.1ad VLAN on a lower link.
    case vlan
    /// A macvlan, macvtap, ipvlan or ipvtap link on a lower link.
    case macvlan
    /// One end of a virtual Ethernet pair.
    case veth
    /// An IP-over-InfiniBand link.
    case infiniband
    /// A Bluetooth network link (BNEP: PAN, NAP, GN).
    case bluetooth
    /// A CAN bus link (or a virtual one).
    case can
    /// Anything else: dummy, ifb, VRF, nlmon, an unknown virtual kind or link type.
    case other

    /// The raw value: `"wifi"`, `"wwan"`, `"veth"`, ...
    public var description: String { rawValue }

    /// The ``InterfaceType`` this kind reports on its own: ``wifi`` is Wi-Fi, ``wwan`` is
    /// cellular, ``ethernet`` is wired Ethernet, ``loopback`` is loopback, everything else is
    /// other (before stacked kinds inherit from their lower links).
    package var interfaceType: InterfaceType {
        switch self {
        case .ethernet: return .wiredEthernet
        case .wifi: return .wifi
        case .wwan: return .cellular
        case .loopback: return .loopback
        default: return .other
        }
    }

    /// Whether the kind is a dial-up link or a VPN tunnel: Apple's `transientConnection`
    /// (``ppp``, ``tun``, ``wireguard``, ``tunnel``).
    package var isTransient: Bool {
        switch self {
        case .ppp, .tun, .wireguard, .tunnel: return true
        default: return false
        }
    }

    /// Whether the kind sits on lower links and takes their ``InterfaceType``: ``vlan`` and
    /// ``macvlan`` from their lower link, ``bridge`` and ``bond`` from their ports. Two links of
    /// kind ``other`` do so too, told by their rtnetlink kind string: MACsec (`macsec`) from its
    /// lower link, batman-adv (`batadv`) from its ports.
    package var inheritsLowerType: Bool {
        switch self {
        case .vlan, .macvlan, .bridge, .bond: return true
        default: return false
        }
    }

    /// The kind that an rtnetlink `IFLA_INFO_KIND` names, or `nil` for a kind string this
    /// library does not know (the classifier then weighs the other evidence).
    package init?(rtnetlinkKind kind: String) {
        guard let known = Self.rtnetlinkKinds[kind] else { return nil }
        self = known
    }

    /// `IFLA_INFO_KIND` strings (`rtnl_link_ops.kind` in the kernel) and what they are.
    static let rtnetlinkKinds: [String: LinkKind] = [
        "wwan": .wwan, "rmnet": .wwan,
        "veth": .veth, "vxcan": .can, "vcan": .can, "can": .can,
        "bridge": .bridge, "openvswitch": .bridge,
        "bond": .bond, "team": .bond,
        "vlan": .vlan,
        "macvlan": .macvlan, "macvtap": .macvlan, "ipvlan": .macvlan, "ipvtap": .macvlan,
        "tun": .tun, "wireguard": .wireguard, "ovpn": .tun, "ovpn-dco": .tun,
        "ipip": .tunnel, "sit": .tunnel, "gre": .tunnel, "gretap": .tunnel, "ip6gre": .tunnel,
        "ip6gretap": .tunnel, "ip6tnl": .tunnel, "vti": .tunnel, "vti6": .tunnel, "xfrm": .tunnel,
        "erspan": .tunnel, "ip6erspan": .tunnel, "gtp": .tunnel,
        "vxlan": .overlay, "geneve": .overlay, "bareudp": .overlay,
        "ppp": .ppp, "ipoib": .infiniband,
        "dummy": .other, "ifb": .other, "vrf": .other, "nlmon": .other, "netdevsim": .other,
        "macsec": .other, "hsr": .other, "batadv": .other,
    ]
}
