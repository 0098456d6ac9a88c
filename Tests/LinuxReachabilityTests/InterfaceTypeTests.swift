import Testing
import LinuxReachability

@Suite("Interface types and link kinds")
struct InterfaceTypeTests {
    @Test func rawValuesAndNamesAreNetworkFrameworks() {
        #expect(InterfaceType.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
        #expect(InterfaceType.allCases.map(\.description) == ["other", "wifi", "cellular", "wiredEthernet", "loopback"])
    }

    @Test func everyKindMapsToOneType() {
        let types = Dictionary(uniqueKeysWithValues: LinkKind.allCases.map { ($0, $0.interfaceType) })
        #expect(types[.wifi] == .wifi)
        #expect(types[.wwan] == .cellular)
        #expect(types[.ethernet] == .wiredEthernet)
        #expect(types[.loopback] == .loopback)
        let others = LinkKind.allCases.filter { ![.wifi, .wwan, .ethernet, .loopback].contains($0) }
        #expect(others.allSatisfy { $0.interfaceType == .other })
    }

    @Test func rtnetlinkKindsMapToKinds() {
        #expect(LinkKind(rtnetlinkKind: "wwan") == .wwan)
        #expect(LinkKind(rtnetlinkKind: "rmnet") == .wwan)
        #expect(LinkKind(rtnetlinkKind: "wireguard") == .wireguard)
        #expect(LinkKind(rtnetlinkKind: "ipvlan") == .macvlan)
        #expect(LinkKind(rtnetlinkKind: "team") == .bond)
        #expect(LinkKind(rtnetlinkKind: "gre") == .tunnel)
        #expect(LinkKind(rtnetlinkKind: "no-such-kind") == nil)
        #expect(LinkKind.allCases.filter(\.isTransient) == [.ppp, .tun, .wireguard, .tunnel])
    }
}
