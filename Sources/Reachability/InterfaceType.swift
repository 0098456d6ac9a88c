import Netlink

/// The kind of network a link leads to, with the names and raw values of Network.framework's
/// `NWInterface.InterfaceType`.
public enum InterfaceType: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A virtual or unclassified link (tunnels, bridges without a known port type, ...).
    case other = 0
    /// A Wi-Fi link.
    case wifi = 1
    /// A cellular (WWAN) link.
    case cellular = 2
    /// A wired Ethernet link.
    case wiredEthernet = 3
    /// The loopback link.
    case loopback = 4

    /// `wifi`, `cellular`, `wiredEthernet`, `loopback` or `other`.
    public var description: String {
        switch self {
        case .other: return "other"
        case .wifi: return "wifi"
        case .cellular: return "cellular"
        case .wiredEthernet: return "wiredEthernet"
        case .loopback: return "loopback"
        }
    }

    /// The type that the link-layer type alone suggests: loopback for `ARPHRD_LOOPBACK`, wired
    /// Ethernet for `ARPHRD_ETHER`, other for the rest. This is weak evidence (a Wi-Fi card and
    /// a veth are both `ARPHRD_ETHER`); the full classifier weighs the rtnetlink kind and sysfs.
    public init(arphrdType: ARPHRDType) {
        switch arphrdType {
        case .loopback: self = .loopback
        case .ether: self = .wiredEthernet
        default: self = .other
        }
    }
}
