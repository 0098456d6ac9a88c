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
}
