@testable import Netlink
import Testing

/// Which default routes a re-read does not keep because the kernel is about to flush them: it
/// tells of a link going down before `fib_disable_ip` removes that link's IPv4 routes, and on
/// Linux 6.10+ an IPv4 dump does not wait for that. The race cannot be made to happen on
/// purpose, so the rule is tested here and the outcome in `SubscriptionTests`
/// (`routesFlushedSilentlyByTheKernelLeaveTheState`).
@Suite("Routes the kernel flushes with their links")
struct LinkFlushRuleTests {
    static let links: [Int32: Link] = [
        2: Link(index: 2, name: "up0", arphrdType: .ether, flags: [.up, .running, .lowerUp], operState: .up, mtu: 1500),
        3: Link(index: 3, name: "down0", arphrdType: .ether, flags: [], operState: .down, mtu: 1500),
        4: Link(index: 4, name: "down1", arphrdType: .ether, flags: [], operState: .down, mtu: 1500),
    ]

    static func route(_ family: AddressFamily = .ipv4, type: RouteType = .unicast, hops: [Int32?]) -> Route {
        Route(family: family, destination: IPNetwork(family == .ipv4 ? "0.0.0.0/0" : "::/0")!, type: type,
              nexthops: hops.map { Nexthop(linkIndex: $0) })
    }

    @Test func anIPv4RouteWhoseEveryHopIsOnADownLinkIsFlushed() {
        #expect(KernelStateModel.isFlushedWithItsLinks(Self.route(hops: [3]), links: Self.links))
        #expect(KernelStateModel.isFlushedWithItsLinks(Self.route(hops: [3, 4]), links: Self.links))
    }

    @Test func aRouteWithAHopOnALinkThatIsUpStays() {
        #expect(!KernelStateModel.isFlushedWithItsLinks(Self.route(hops: [2]), links: Self.links))
        #expect(!KernelStateModel.isFlushedWithItsLinks(Self.route(hops: [3, 2]), links: Self.links))
    }

    @Test func ipv6RoutesUnknownLinksAndRoutesWithoutHopsAreNotJudged() {
        #expect(!KernelStateModel.isFlushedWithItsLinks(Self.route(.ipv6, hops: [3]), links: Self.links))
        #expect(!KernelStateModel.isFlushedWithItsLinks(Self.route(hops: [9]), links: Self.links))
        #expect(!KernelStateModel.isFlushedWithItsLinks(Self.route(hops: [nil]), links: Self.links))
        #expect(!KernelStateModel.isFlushedWithItsLinks(Self.route(type: .blackhole, hops: []), links: Self.links))
    }
}
