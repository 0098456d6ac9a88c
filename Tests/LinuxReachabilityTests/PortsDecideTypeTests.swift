import Netlink
@testable import LinuxReachability
import Testing

/// `LinkClassifier.portsMayDecideType(ofKind:)` and `lowerLinkMayDecideType(ofKind:)` let
/// one-shot answers skip reading the ports of a link (a dump of every link, filtered by master
/// in the kernel) and its lower link. They must never skip links that the classifier would
/// look at: for every kind they say no to, a Wi-Fi or cellular port or lower link changes
/// nothing, whatever the link's other evidence.
@Suite("Ports that decide a link's type")
struct PortsDecideTypeTests {
    @Test func aKindWhosePortsOrLowerLinkAreNotReadIsClassifiedAlikeWithAndWithoutThem() {
        let decidedByPorts = kindsDecided(skippedWhen: LinkClassifier.portsMayDecideType(ofKind:)) { kind, arphrd, sysfs, other in
            (LinkFacts(index: 10, name: "m0", arphrdType: arphrd, kind: kind, sysfs: sysfs),
             LinkFacts(index: 11, name: "p0", arphrdType: .ether, masterIndex: 10, sysfs: other))
        }
        // The same for a lower link (`IFLA_LINK`) of another type.
        let decidedByLowerLink = kindsDecided(skippedWhen: LinkClassifier.lowerLinkMayDecideType(ofKind:)) { kind, arphrd, sysfs, other in
            (LinkFacts(index: 10, name: "u0", arphrdType: arphrd, kind: kind, lowerLinkIndex: 11, sysfs: sysfs),
             LinkFacts(index: 11, name: "l0", arphrdType: .ether, sysfs: other))
        }
        #expect(decidedByLowerLink.isSuperset(of: ["vlan", "macvlan", "ipvlan", "macsec"]), "\(decidedByLowerLink.sorted())")
        #expect(!LinkClassifier.lowerLinkMayDecideType(ofKind: "veth") && !LinkClassifier.lowerLinkMayDecideType(ofKind: "vxlan"))
        // The comparison can tell: these kinds take their ports' type.
        #expect(decidedByPorts.isSuperset(of: ["bridge", "bond", "team", "batadv", "openvswitch", "(none)"]), "\(decidedByPorts.sorted())")
        #expect(!LinkClassifier.portsMayDecideType(ofKind: "veth") && !LinkClassifier.portsMayDecideType(ofKind: "vrf"))
    }

    /// The kinds whose link (index 10) `stacked` classifies differently with the other link
    /// (index 11, a Wi-Fi or cellular port or lower link) than without it, over every kind, four
    /// link types and four sysfs forms; for a kind that `mayDecide` says no to, expects no
    /// difference.
    private func kindsDecided(skippedWhen mayDecide: (String?) -> Bool,
                              _ stacked: (String?, ARPHRDType, SysfsFacts, SysfsFacts) -> (LinkFacts, LinkFacts)) -> Set<String> {
        let kinds: [String?] = LinkKind.rtnetlinkKinds.keys.sorted() + LinkClassifier.portsVoteRtnetlinkKinds.sorted()
            + LinkClassifier.throughOneLinkRtnetlinkKinds.sorted() + ["no-such-kind", nil]
        let sysfsForms: [SysfsFacts] = [
            .absent, SysfsFacts(isPresent: true),
            SysfsFacts(isPresent: true, hasDevice: true, driver: "e1000e", bus: "pci"),
            SysfsFacts(isPresent: true, deviceType: "bridge"),
        ]
        let others = [SysfsFacts(isPresent: true, hasPhy80211: true), SysfsFacts(isPresent: true, deviceType: "wwan")]
        var decided: Set<String> = []
        for kind in kinds {
            for arphrd in [ARPHRDType.ether, .none, .rawIP, .loopback] {
                for sysfs in sysfsForms {
                    for other in others {
                        let (link, stackedOn) = stacked(kind, arphrd, sysfs, other)
                        let alone = LinkClassifier.classify([link])[10]
                        let withOther = LinkClassifier.classify([link, stackedOn])[10]
                        if alone != withOther { decided.insert(kind ?? "(none)") }
                        if !mayDecide(kind) {
                            #expect(alone == withOther, "\(kind ?? "no kind"), \(arphrd), \(sysfs): \(String(describing: alone)) against \(String(describing: withOther))")
                        }
                    }
                }
            }
        }
        return decided
    }
}
