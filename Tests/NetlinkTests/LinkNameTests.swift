import Netlink
import Testing

/// Which link a name names (`Link.named(_:in:)`, `NetworkState.link(named:)`), where the kernel's
/// silence about a down link's alternative names lets two links seem to hold one.
@Suite("Links by name")
struct LinkNameTests {
    private func link(_ index: Int32, _ name: String, up: Bool, altnames: [String] = []) -> Link {
        Link(index: index, name: name, arphrdType: .ether, flags: up ? [.up, .running] : [], operState: up ? .up : .down,
             mtu: 1500, alternativeNames: altnames)
    }

    @Test func aNameWinsOverAnAlternativeNameThenALinkThatIsUpThenTheLowestIndex() {
        // eth0, down, lost `uplink0` without a message; eth1 took it and was told of, up.
        let stale = link(2, "eth0", up: false, altnames: ["uplink0", "enp0s3"])
        let taker = link(7, "eth1", up: true, altnames: ["uplink0"])
        let named = link(9, "enp0s3", up: false)
        let links = [named, taker, stale]
        #expect(Link.named("uplink0", in: links)?.index == 7, "the link that is up")
        #expect(Link.named("enp0s3", in: links)?.index == 9, "a link's name over another's alternative name")
        #expect(Link.named("eth0", in: links)?.index == 2)
        #expect(Link.named("nosuch0", in: links) == nil)
        // Both down (or both up): the lowest index, whatever the order given.
        let other = link(5, "eth2", up: false, altnames: ["uplink0"])
        #expect(Link.named("uplink0", in: [stale, other])?.index == 2)
        #expect(Link.named("uplink0", in: [other, stale])?.index == 2)
        let state = NetworkState(links: links, addresses: [], defaultRoutes: [])
        #expect(state.link(named: "uplink0")?.index == 7)
        #expect(state.link(named: "enp0s3")?.index == 9)
    }
}
