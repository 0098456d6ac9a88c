@testable import Netlink
import Testing

/// The published state catches up with the subscription's through the batch's events
/// (`NetworkState.catchUp(with:through:)`), entry by entry.
@Suite("A published state catching up through a batch")
struct StateCatchUpTests {
    private static func route(_ destination: String, via gateway: String) -> Route {
        Route(family: .ipv4, destination: IPNetwork(destination)!,
              nexthops: [Nexthop(gateway: IPAddress(gateway)!, linkIndex: 2)])
    }

    /// Route events for other prefixes (a churn) are skipped: only default routes are kept,
    /// and the default route's change is applied alongside them.
    @Test func appliesDefaultRouteChangesAmongOtherRoutes() {
        let oldDefault = Self.route("0.0.0.0/0", via: "10.0.0.1")
        let newDefault = Self.route("0.0.0.0/0", via: "10.0.0.2")
        let other = Self.route("10.77.0.0/16", via: "10.0.0.1")
        let otherDefaultTable = Route(family: .ipv4, table: RouteTable(rawValue: 100), destination: .defaultRoute(.ipv4),
                                      nexthops: [Nexthop(gateway: IPAddress("10.0.0.3")!, linkIndex: 2)])
        var published = NetworkState(links: [], addresses: [], defaultRoutes: [oldDefault])
        let newer = NetworkState(links: [], addresses: [], defaultRoutes: [newDefault, otherDefaultTable])
        published.catchUp(with: newer, through: [
            .route(.new(other)),
            .route(.changed(old: oldDefault, new: newDefault)),
            .route(.replaced(other)),
            .route(.new(otherDefaultTable)),
            .route(.removed(other)),
        ])
        #expect(published == newer)
        #expect(published.defaultRoutes[other.key] == nil)
        #expect(published.defaultRoutes[newDefault.key] == newDefault)
        #expect(published.defaultRoutes[otherDefaultTable.key] == otherDefaultTable)
    }

    /// A removed default route leaves the published state too.
    @Test func removesADefaultRoute() {
        let gone = Self.route("0.0.0.0/0", via: "10.0.0.1")
        var published = NetworkState(links: [], addresses: [], defaultRoutes: [gone])
        let newer = NetworkState(links: [], addresses: [], defaultRoutes: [])
        published.catchUp(with: newer, through: [.route(.removed(gone))])
        #expect(published.defaultRoutes.isEmpty)
        #expect(published == newer)
    }
}
