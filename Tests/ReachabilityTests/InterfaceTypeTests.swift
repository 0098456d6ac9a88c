import Testing
import Netlink
import Reachability

@Suite("Interface types")
struct InterfaceTypeTests {
    @Test func rawValuesAndNamesAreNetworkFrameworks() {
        #expect(InterfaceType.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
        #expect(InterfaceType.allCases.map(\.description) == ["other", "wifi", "cellular", "wiredEthernet", "loopback"])
    }

    @Test func linkLayerTypeAloneGivesAWeakAnswer() {
        #expect(InterfaceType(arphrdType: .loopback) == .loopback)
        #expect(InterfaceType(arphrdType: .ether) == .wiredEthernet)
        #expect(InterfaceType(arphrdType: .none) == .other)
        #expect(InterfaceType(arphrdType: .ppp) == .other)
    }
}
