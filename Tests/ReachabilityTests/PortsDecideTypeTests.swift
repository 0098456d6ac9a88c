import Netlink
@testable import Reachability
import Testing

/// `LinkClassifier.portsMayDecideType(ofKind:)` and `lowerLinkMayDecideType(ofKind:)` let
/// one-shot answers skip reading the ports of a link (a dump of every link, filtered by master
/// in the kernel) and its lower link. They must never skip links that the classifier would
/// look at: for every kind they say no to, a Wi-Fi or cellular port or lower link changes
/// nothing, whatever the link's other evidence.
@Suite("Ports that decide a link's type")
struct PortsDecideTypeTests {
    @Test func aKindWhosePortsOrLowerLinkAreNotReadIsClassifiedAlikeWithAndWithoutThem() {
        let kinds: [String?] = LinkKind.rtnetlinkKinds.keys.sorted() + LinkClassifier.portsVoteRtnetlinkKinds.sorted()
            + LinkClassifier.throughOneLinkRtnetlinkKinds.sorted() + ["no-such-kind", nil]
        let sysfsForms: [SysfsFacts] = [
            .absent, SysfsFacts(isPresent: true),
            SysfsFacts(isPresent: true, hasDevice: true, driver: "e1000e", bus: "pci"),
            SysfsFacts(isPresent: true, deviceType: "bridge"),
        ]
        let ports = [SysfsFacts(isPresent: true, hasPhy80211: true), SysfsFacts(isPresent: true, deviceType: "wwan")]
        var decidedByPorts: Set<String> = []
        for kind in kinds {
            for arphrd in [ARPHRDType.ether, .none, .rawIP, .loopback] {
                for sysfs in sysfsForms {
                    for port in ports {
                        let master = LinkFacts(index: 10, name: "m0", arphrdType: arphrd, kind: kind, sysfs: sysfs)
                        let member = LinkFacts(index: 11, name: "p0", arphrdType: .ether, masterIndex: 10, sysfs: port)
                        let alone = LinkClassifier.classify([master])[10]
                        let withPort = LinkClassifier.classify([master, member])[10]
                        if alone != withPort { decidedByPorts.insert(kind ?? "(none)") }
                        if !LinkClassifier.portsMayDecideType(ofKind: kind) {
                            #expect(alone == withPort, "\(kind ?? "no kind"), \(arphrd), \(sysfs): \(String(describing: alone)) against \(String(describing: withPort))")
                        }
                    }
                }
            }
        }
        // The same for a lower link (`IFLA_LINK`) of another type.
        var decidedByLowerLink: Set<String> = []
        for kind in kinds {
            for arphrd in [ARPHRDType.ether, .none, .rawIP, .loopback] {
                for sysfs in sysfsForms {
                    for lowerSysfs in ports {
                        let upper = LinkFacts(index: 10, name: "u0", arphrdType: arphrd, kind: kind, lowerLinkIndex: 11, sysfs: sysfs)
                        let lower = LinkFacts(index: 11, name: "l0", arphrdType: .ether, sysfs: lowerSysfs)
                        let alone = LinkClassifier.classify([upper])[10]
                        let withLower = LinkClassifier.classify([upper, lower])[10]
                        if alone != withLower { decidedByLowerLink.insert(kind ?? "(none)") }
                        if !LinkClassifier.lowerLinkMayDecideType(ofKind: kind) {
                            #expect(alone == withLower, "\(kind ?? "no kind"), \(arphrd), \(sysfs): \(String(describing: alone)) against \(String(describing: withLower))")
                        }
                    }
                }
            }
        }
        #expect(decidedByLowerLink.isSuperset(of: ["vlan", "macvlan", "ipvlan", "macsec"]), "\(decidedByLowerLink.sorted())")
        #expect(!LinkClassifier.lowerLinkMayDecideType(ofKind: "veth") && !LinkClassifier.lowerLinkMayDecideType(ofKind: "vxlan"))
        // The comparison can tell: these kinds take their ports' type.
        #expect(decidedByPorts.isSuperset(of: ["bridge", "bond", "team", "batadv", "openvswitch", "(none)"]), "\(decidedByPorts.sorted())")
        #expect(!LinkClassifier.portsMayDecideType(ofKind: "veth") && !LinkClassifier.portsMayDecideType(ofKind: "vrf"))
    }
}
