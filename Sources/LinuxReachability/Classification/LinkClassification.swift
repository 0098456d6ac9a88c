import Netlink

/// The classifier's answer for one link: its type, its finer kind, its cost facts, and the
/// evidence that decided.
public struct LinkClassification: Sendable, Hashable, CustomStringConvertible {
    /// The type in Network.framework's terms: Wi-Fi, cellular, wired Ethernet, loopback, other.
    public var type: InterfaceType
    /// What the link is, finer than ``type``.
    public var kind: LinkKind
    /// Whether traffic over the link is likely to cost money or a data allowance: cellular
    /// links, USB tethering to a phone (`ipheth`, `rndis_host`), Bluetooth PAN, and links
    /// stacked on or bridging such links. NWPath's `isExpensive`.
    public var isExpensive: Bool
    /// Whether the link is a dial-up link or a VPN tunnel (PPP, TUN/TAP, WireGuard, IP
    /// tunnels): SCNetworkReachability's `transientConnection`.
    public var isTransient: Bool
    /// Whether the link has no parent device: a software link (veth, bridge, tunnel, loopback).
    /// Without sysfs evidence this is judged from the rtnetlink kind.
    public var isVirtual: Bool
    /// Whether user policy marks the link as constrained (NWPath's `isConstrained`; Linux has
    /// no Low Data Mode, see <doc:ClassifyingLinks>).
    public var isConstrained: Bool
    /// The evidence that decided ``type`` and ``kind``.
    package var evidence: ClassificationEvidence

    /// A classification as given.
    package init(type: InterfaceType, kind: LinkKind, isExpensive: Bool = false, isTransient: Bool = false,
                isVirtual: Bool = false, isConstrained: Bool = false, evidence: ClassificationEvidence) {
        self.type = type
        self.kind = kind
        self.isExpensive = isExpensive
        self.isTransient = isTransient
        self.isVirtual = isVirtual
        self.isConstrained = isConstrained
        self.evidence = evidence
    }

    /// Such as `wifi (wifi, by sysfs phy80211)` or `other (tun, transient, virtual, by ...)`.
    public var description: String {
        var parts = [kind.rawValue]
        if isExpensive { parts.append("expensive") }
        if isTransient { parts.append("transient") }
        if isVirtual { parts.append("virtual") }
        if isConstrained { parts.append("constrained") }
        return "\(type) (\(parts.joined(separator: ", ")), by \(evidence))"
    }
}

/// The piece of evidence that decided a link's classification, in the classifier's order of
/// trust (see `LinkClassifier`).
package enum ClassificationEvidence: Sendable, Hashable, CustomStringConvertible {
    /// The link has a `phy80211` entry in sysfs.
    case phy80211
    /// The link has a `wireless/` directory in sysfs.
    case wirelessDirectory
    /// The `DEVTYPE=` of the link's `uevent`.
    case deviceType(String)
    /// The link-layer type (`ARPHRD_*`).
    case linkType(ARPHRDType)
    /// The rtnetlink kind (`IFLA_INFO_KIND`).
    case rtnetlinkKind(String)
    /// The driver of the parent device, from a list of cellular modem drivers.
    case modemDriver(String)
    /// The parent device belongs to the kernel's WWAN class.
    case wwanDevice
    /// An Ethernet link with a parent device; its driver and bus, when sysfs names them.
    case physicalDevice(driver: String?, bus: String?)
    /// The type of the lower link (VLAN, macvlan).
    case lowerLink(Int32)
    /// The common type of the ports (bridge, bond) at these indexes.
    case ports([Int32])
    /// A predictable-name prefix (`wl`, `ww`, `en`, `eth`), the weakest hint.
    case namePrefix(String)
    /// Nothing pointed anywhere.
    case none

    /// Such as `sysfs phy80211`, `uevent DEVTYPE=wwan`, `IFLA_INFO_KIND veth`.
    package var description: String {
        switch self {
        case .phy80211: return "sysfs phy80211"
        case .wirelessDirectory: return "sysfs wireless/"
        case .deviceType(let type): return "uevent DEVTYPE=\(type)"
        case .linkType(let type): return "link type \(type)"
        case .rtnetlinkKind(let kind): return "IFLA_INFO_KIND \(kind)"
        case .modemDriver(let driver): return "modem driver \(driver)"
        case .wwanDevice: return "WWAN class device"
        case .physicalDevice(let driver, let bus):
            let details = [driver.map { "driver \($0)" }, bus.map { "bus \($0)" }].compactMap { $0 }
            return details.isEmpty ? "physical device" : "physical device (\(details.joined(separator: ", ")))"
        case .lowerLink(let index): return "lower link \(index)"
        case .ports(let indexes): return "ports " + indexes.map(String.init).joined(separator: ", ")
        case .namePrefix(let prefix): return "name prefix \(prefix)"
        case .none: return "no evidence"
        }
    }
}
