import Netlink

/// The pure classifier: ``LinkFacts`` in, ``LinkClassification`` out, no I/O.
///
/// The evidence is weighed in this order; the first rule that matches decides
/// (the article <doc:ClassifyingLinks> gives the reason for each):
///
/// 1. A radio in sysfs: `phy80211`, `wireless/`, or `DEVTYPE=wlan` is Wi-Fi; `DEVTYPE=wwan`
///    is cellular. This outranks the rtnetlink kind.
/// 2. `ARPHRD_LOOPBACK` is loopback.
/// 3. Cellular without a radio `DEVTYPE`: the rtnetlink kind `wwan` (the kernel's WWAN
///    framework) or `rmnet`, `ARPHRD_RAWIP` (or vendor kernels' older 530), a modem driver (``modemDrivers``), or a parent
///    device in the WWAN class.
/// 4. A known rtnetlink kind (``LinkKind/init(rtnetlinkKind:)``): veth, bridge, tun, ...
/// 5. Any other `DEVTYPE` that names a kind: `bluetooth` (on an Ethernet link only: a
///    Bluetooth PAN; 6LoWPAN over Bluetooth Low Energy has it too), `ppp`, `bridge`, `bond`, ...
/// 6. The link-layer type: PPP, InfiniBand, CAN, IEEE 802.11 monitor headers, IP tunnels.
/// 7. An Ethernet link with a parent device is wired Ethernet (expensive behind a tethering
///    driver, ``tetheringDrivers``); a parent device with another link type is other.
/// 8. Only when sysfs gave no evidence at all, for an Ethernet link with no rtnetlink kind:
///    the name prefix `wl` (Wi-Fi), `ww` (cellular, also on a raw-IP link without a link
///    layer, `ARPHRD_NONE`), `en` or `eth` (wired).
/// 9. Otherwise other.
///
/// Then, over a whole set of links (``classify(_:policy:)``), stacked links take the type of
/// what is under them: a VLAN, macvlan or MACsec link the type of its lower link, a bridge,
/// bond or batman-adv mesh interface the type its ports agree on (ports with no type, like the veths and taps of containers and virtual
/// machines, do not vote), and a link that no rule explains and whose only sign is one
/// `lower_` entry in sysfs (``SysfsFacts/lowerLinkNames``: qmi_wwan's QMAP mux links) the type
/// of that link. A bridge or veth with no such evidence is ``InterfaceType/other``.
package enum LinkClassifier {
    /// Drivers of cellular modems' network links. Most also set `DEVTYPE=wwan` (usbnet's
    /// `FLAG_WWAN`); the list catches those that do not and older kernels.
    package static let modemDrivers: Set<String> = [
        "qmi_wwan", "cdc_mbim", "huawei_cdc_ncm", "sierra_net", "mhi_net", "ipa", "iosm",
        "mtk_t7xx", "hso", "kalmia", "GobiNet", "qmi_wwan_q",
    ]

    /// Drivers of USB tethering to a phone: wired links whose upstream is cellular, so
    /// expensive. `ipheth` is Apple's iPhone tethering, `rndis_host` Android's (RNDIS).
    package static let tetheringDrivers: Set<String> = ["ipheth", "rndis_host"]

    /// `DEVTYPE=` values, other than the radios, that name a kind.
    static let deviceTypeKinds: [String: LinkKind] = [
        "bluetooth": .bluetooth, "ppp": .ppp, "wireguard": .wireguard, "ovpn": .tun, "bridge": .bridge,
        "bond": .bond, "vlan": .vlan, "vxlan": .overlay, "geneve": .overlay,
    ]

    /// The raw-IP link type of vendor kernels (Android's, Qualcomm's) from before Linux 4.14
    /// gave `ARPHRD_RAWIP` its number, 519: 530, which mainline never assigned. NetworkManager
    /// reads it as a modem's link too.
    static let vendorRawIP = ARPHRDType(rawValue: 530)

    /// rtnetlink kinds whose links have a parent device; every other kind is virtual (`rmnet`,
    /// `vcan` and `vxcan` too, whose kinds are cellular and CAN).
    static let physicalRtnetlinkKinds: Set<String> = ["wwan", "can", "ipoib"]

    /// rtnetlink kinds of links stacked on one lower link (`IFLA_LINK`) that take its type,
    /// beside ``LinkKind/vlan`` and ``LinkKind/macvlan``: MACsec sends through its real device.
    static let throughOneLinkRtnetlinkKinds: Set<String> = ["macsec"]

    /// rtnetlink kinds of links that take the type their ports agree on, beside
    /// ``LinkKind/bridge`` and ``LinkKind/bond``: batman-adv's mesh interface sends through its
    /// hard interfaces, which the kernel makes its ports (`netdev_master_upper_dev_link`).
    static let portsVoteRtnetlinkKinds: Set<String> = ["batadv"]

    /// Whether the ports of a link of rtnetlink kind `kind` can decide its type: not when the
    /// kind is known and is none of the kinds that take a lower type (``LinkKind/inheritsLowerType``:
    /// a bridge, a bond, and a VLAN or macvlan, which have no ports anyway) nor one of
    /// ``portsVoteRtnetlinkKinds``: a veth, a VRF, a dummy, whatever its sysfs says
    /// (``classify(_:)`` gives a known kind before anything but a radio, loopback or cellular,
    /// none of which looks at ports). So such a link's ports need not be read.
    static func portsMayDecideType(ofKind kind: String?) -> Bool {
        guard let kind, let known = LinkKind(rtnetlinkKind: kind) else { return true }
        return known.inheritsLowerType || portsVoteRtnetlinkKinds.contains(kind)
    }

    /// Whether the lower link (`IFLA_LINK`) of a link of rtnetlink kind `kind` can decide its
    /// type: not when the kind is known and is neither a VLAN's nor a macvlan's nor one of
    /// ``throughOneLinkRtnetlinkKinds`` (a veth's peer, a vxlan's or a GRE tunnel's underlay
    /// says nothing of it), for the reason ``portsMayDecideType(ofKind:)`` gives. A link without
    /// a known kind may take the type of a lower link that sysfs names, found by name.
    static func lowerLinkMayDecideType(ofKind kind: String?) -> Bool {
        guard let kind, let known = LinkKind(rtnetlinkKind: kind) else { return true }
        return known == .vlan || known == .macvlan || throughOneLinkRtnetlinkKinds.contains(kind)
    }

    /// Whether sysfs can change the classification of a link of rtnetlink kind `kind`: not for
    /// a known kind made in software (all but ``physicalRtnetlinkKinds``), which decides the
    /// link's type (rule 4 of ``classify(_:)``) and has no parent device, radio or modem driver
    /// for rules 1 and 3 to find. Such a link's sysfs entry need not be read.
    static func sysfsMayDecide(ofKind kind: String?) -> Bool {
        guard let kind, LinkKind(rtnetlinkKind: kind) != nil else { return true }
        return physicalRtnetlinkKinds.contains(kind)
    }

    /// Stacked links are followed at most this deep (the kernel allows 8, `MAX_NEST_DEV`).
    static let maximumStackDepth = 16

    /// Classifies one link from its own evidence. Stacked links (VLAN, macvlan, MACsec, bridge,
    /// bond, batman-adv)
    /// are ``InterfaceType/other`` here; ``classify(_:policy:)`` resolves them.
    package static func classify(_ facts: LinkFacts) -> LinkClassification {
        let sysfs = facts.sysfs
        let virtual = isVirtual(facts)
        func answer(_ kind: LinkKind, _ evidence: ClassificationEvidence, expensive: Bool = false) -> LinkClassification {
            LinkClassification(type: kind.interfaceType, kind: kind,
                               isExpensive: expensive || kind == .wwan || kind == .bluetooth,
                               isTransient: kind.isTransient, isVirtual: virtual, evidence: evidence)
        }
        // 1. A radio in sysfs.
        if sysfs.hasPhy80211 { return answer(.wifi, .phy80211) }
        if sysfs.hasWirelessDirectory { return answer(.wifi, .wirelessDirectory) }
        if sysfs.deviceType == "wlan" { return answer(.wifi, .deviceType("wlan")) }
        if sysfs.deviceType == "wwan" { return answer(.wwan, .deviceType("wwan")) }
        // 2. Loopback.
        if facts.arphrdType == .loopback { return answer(.loopback, .linkType(.loopback)) }
        // 3. Cellular without a radio DEVTYPE.
        if let kind = facts.kind, LinkKind(rtnetlinkKind: kind) == .wwan { return answer(.wwan, .rtnetlinkKind(kind)) }
        if facts.arphrdType == .rawIP || facts.arphrdType == vendorRawIP { return answer(.wwan, .linkType(facts.arphrdType)) }
        if let driver = sysfs.driver, modemDrivers.contains(driver) { return answer(.wwan, .modemDriver(driver)) }
        if sysfs.bus == "wwan" { return answer(.wwan, .wwanDevice) }
        // 4. The rtnetlink kind.
        if let kind = facts.kind, let known = LinkKind(rtnetlinkKind: kind) { return answer(known, .rtnetlinkKind(kind)) }
        // 5. Other device types.
        if let type = sysfs.deviceType, let known = deviceTypeKinds[type],
           known != .bluetooth || facts.arphrdType == .ether {
            return answer(known, .deviceType(type))
        }
        // 6. The link-layer type.
        if let known = kind(ofLinkType: facts.arphrdType) { return answer(known, .linkType(facts.arphrdType)) }
        // 7. A physical device.
        if sysfs.hasDevice {
            let evidence = ClassificationEvidence.physicalDevice(driver: sysfs.driver, bus: sysfs.bus)
            guard facts.arphrdType == .ether else { return answer(.other, evidence) }
            return answer(.ethernet, evidence, expensive: sysfs.driver.map(tetheringDrivers.contains) ?? false)
        }
        // 8. The name, only without any sysfs evidence.
        if !sysfs.isPresent, facts.kind == nil, let (prefix, kind) = namePrefixKind(facts.name),
           facts.arphrdType == .ether || (kind == .wwan && facts.arphrdType == .none) {
            return answer(kind, .namePrefix(prefix))
        }
        return answer(.other, .none)
    }

    /// Classifies a set of links, the links of one namespace, resolving stacked links against
    /// the others and applying `policy` for ``LinkClassification/isConstrained``.
    /// - Returns: The classification of every link, by interface index.
    package static func classify(_ links: some Sequence<LinkFacts>,
                                policy: ConstrainedLinkPolicy = .none) -> [Int32: LinkClassification] {
        var facts: [Int32: LinkFacts] = [:]
        var ports: [Int32: [Int32]] = [:]
        var indexByName: [String: Int32] = [:]
        for link in links {
            facts[link.index] = link
            indexByName[link.name] = link.index
        }
        for link in facts.values {
            if let master = link.masterIndex { ports[master, default: []].append(link.index) }
        }
        // Answers that did not hit the depth limit anywhere below them; those are kept.
        var complete: [Int32: LinkClassification] = [:]

        func resolve(_ index: Int32, depth: Int) -> (LinkClassification, isComplete: Bool)? {
            if let done = complete[index] { return (done, true) }
            guard let link = facts[index] else { return nil }
            var answer = classify(link)
            var isComplete = true
            // A stacked link sends through what it inherits from, so it is constrained as that is.
            var inheritsConstraint = false
            // The one link this one sends through, if it is stacked on one: a VLAN's or
            // macvlan's lower link (`IFLA_LINK`), or, for a link that nothing else explains, the
            // one link that sysfs stacks it on (its `lower_` entry: a QMAP mux link of a modem
            // rides on the modem's link; its kind stays unknown, it takes the type).
            let throughOneLink = answer.kind == .vlan || answer.kind == .macvlan
                || link.kind.map(throughOneLinkRtnetlinkKinds.contains) == true
            let portsVote = answer.kind.inheritsLowerType || link.kind.map(portsVoteRtnetlinkKinds.contains) == true
            let lowerLink: Int32?
            if throughOneLink {
                lowerLink = link.lowerLinkIndex
            } else if answer.kind == .other, link.kind == nil, link.lowerLinkIndex == nil, link.sysfs.lowerLinkNames.count == 1,
                      let named = indexByName[link.sysfs.lowerLinkNames[0]], named != index {
                lowerLink = named
            } else {
                lowerLink = nil
            }
            if answer.type == .other, portsVote || lowerLink != nil {
                if depth >= maximumStackDepth {
                    isComplete = false
                } else if throughOneLink || lowerLink != nil {
                    if let lower = lowerLink, lower != index, let (below, belowComplete) = resolve(lower, depth: depth + 1) {
                        isComplete = belowComplete
                        if below.type != .other {
                            answer.type = below.type
                            answer.isExpensive = answer.isExpensive || below.isExpensive
                            inheritsConstraint = below.isConstrained
                            answer.evidence = .lowerLink(lower)
                        }
                    }
                } else {
                    var voters: [(Int32, LinkClassification)] = []
                    for port in (ports[index] ?? []).sorted() where port != index {
                        guard let (below, belowComplete) = resolve(port, depth: depth + 1) else { continue }
                        isComplete = isComplete && belowComplete
                        if below.type != .other { voters.append((port, below)) }
                    }
                    if let first = voters.first, voters.allSatisfy({ $0.1.type == first.1.type }) {
                        answer.type = first.1.type
                        answer.isExpensive = answer.isExpensive || voters.contains { $0.1.isExpensive }
                        inheritsConstraint = voters.contains { $0.1.isConstrained }
                        answer.evidence = .ports(voters.map(\.0))
                    }
                }
            }
            answer.isConstrained = inheritsConstraint || policy.isConstrained(name: link.name, alternativeNames: link.alternativeNames,
                                                                                     type: answer.type, kind: answer.kind)
            if isComplete { complete[index] = answer }
            return (answer, isComplete)
        }

        var answers: [Int32: LinkClassification] = [:]
        for index in facts.keys {
            answers[index] = resolve(index, depth: 0)?.0
        }
        return answers
    }

    /// Whether the link has no parent device: from sysfs when it was read, otherwise from
    /// the link type and the rtnetlink kind.
    static func isVirtual(_ facts: LinkFacts) -> Bool {
        if facts.sysfs.isPresent { return !facts.sysfs.hasDevice }
        if facts.arphrdType == .loopback { return true }
        guard let kind = facts.kind else { return false }
        return !physicalRtnetlinkKinds.contains(kind)
    }

    /// The kind that a link-layer type alone shows, for the types that show one.
    static func kind(ofLinkType type: ARPHRDType) -> LinkKind? {
        switch type {
        case .ppp: return .ppp
        case .infiniband: return .infiniband
        case .can: return .can
        case .ieee80211Radiotap, .ieee80211, .ieee80211Prism: return .wifi
        case .ipipTunnel, .ipv6Tunnel, .sit, .ipGRE, .ip6GRE: return .tunnel
        default: return nil
        }
    }

    /// The kind a predictable or traditional interface name suggests, with the prefix.
    static func namePrefixKind(_ name: String) -> (String, LinkKind)? {
        for (prefix, kind) in [("wl", LinkKind.wifi), ("ww", .wwan), ("eth", .ethernet), ("en", .ethernet)]
        where name.hasPrefix(prefix) && name.count > prefix.count {
            return (prefix, kind)
        }
        return nil
    }
}
