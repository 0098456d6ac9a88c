import Netlink
@testable import Reachability
import Testing

/// `LinkClassifier.portsMayDecideType(ofKind:)` lets one-shot answers skip reading the ports of
/// a link (a dump of every link, filtered by master in the kernel). It must never skip ports
/// that the classifier would look at: for every kind it says no to, a Wi-Fi or cellular port
/// changes nothing, whatever the link's other evidence.
@Suite("Ports that decide a link's type")
struct PortsDecideTypeTests {
    @Test func aKindWhosePortsAreNotReadIsClassifiedAlikeWithAndWithoutThem() {
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
        // The comparison can tell: these kinds take their ports' type.
        #expect(decidedByPorts.isSuperset(of: ["bridge", "bond", "team", "batadv", "openvswitch", "(none)"]), "\(decidedByPorts.sorted())")
        #expect(!LinkClassifier.portsMayDecideType(ofKind: "veth") && !LinkClassifier.portsMayDecideType(ofKind: "vrf"))
    }
}
