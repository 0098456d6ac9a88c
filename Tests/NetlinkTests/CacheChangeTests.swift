import Foundation
import Netlink
import NetnsTestSupport
import Testing

/// Each kind of libnl's change callbacks, as the subscription reports it: one typed event with
/// the old and the new value, and the state after it equal to a fresh read.
@Suite("Changes from libnl's caches", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct CacheChangeTests {
    /// va (10.1.0.1/24) and its peer vb, both up.
    private func pair(_ label: String) throws -> TestNamespace {
        let ns = try TestNamespace(label)
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va"])
        return ns
    }

    @Test func aLinkChangeCarriesBothVersions() throws {
        let ns = try pair("cclink")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let recorder = EventRecorder(subscription)
        try ns.ip("link", "set", "va", "mtu", "1400")
        #expect(recorder.waitFor { event in
            guard case .changed(let old, let new)? = event.linkChange else { return false }
            return new.name == "va" && old.mtu == 1500 && new.mtu == 1400 && old.index == new.index
        })
        try ns.ip("link", "add", "vc", "type", "veth", "peer", "name", "vd")
        #expect(recorder.waitFor { if case .new(let link)? = $0.linkChange { link.name == "vc" } else { false } })
        try ns.ip("link", "del", "vc")
        #expect(recorder.waitFor { if case .removed(let link)? = $0.linkChange { link.name == "vc" } else { false } })
        #expect(subscription.state.link(named: "va")?.mtu == 1400)
    }

    @Test func anAddressChangeCarriesBothVersions() throws {
        let ns = try pair("ccaddr")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let recorder = EventRecorder(subscription)
        try ns.ip("address", "add", "10.3.0.1/24", "dev", "va", "valid_lft", "300", "preferred_lft", "300")
        #expect(recorder.waitFor { if case .new(let a)? = $0.addressChange { a.cidr == "10.3.0.1/24" } else { false } })
        try ns.ip("address", "change", "10.3.0.1/24", "dev", "va", "valid_lft", "forever", "preferred_lft", "forever")
        #expect(recorder.waitFor { event in
            guard case .changed(let old, let new)? = event.addressChange else { return false }
            return new.cidr == "10.3.0.1/24" && old.validLifetime != .forever && new.validLifetime == .forever
        })
        try ns.ip("address", "del", "10.3.0.1/24", "dev", "va")
        #expect(recorder.waitFor { if case .removed(let a)? = $0.addressChange { a.cidr == "10.3.0.1/24" } else { false } })
    }

    /// The kernel sends a netconf message when a routing sysctl changes, which no route or link
    /// message tells of.
    @Test func aSysctlChangeIsAConfigurationChange() throws {
        let ns = try pair("ccconf")
        defer { ns.delete() }
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        let va = try ns.index(of: "va")
        let key = InterfaceConfiguration.Key(family: .ipv4, scope: .link(va))
        #expect(subscription.state.configurations[key]?.ignoresRoutesWithLinkdown == false)
        let recorder = EventRecorder(subscription)
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.va.ignore_routes_with_linkdown=1"])
        #expect(recorder.waitFor { event in
            guard case .changed(let old, let new)? = event.configurationChange else { return false }
            return new.key == key && old.ignoresRoutesWithLinkdown == false && new.ignoresRoutesWithLinkdown == true
                && new.forwarding == old.forwarding
        })
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.forwarding=1"])
        #expect(recorder.waitFor { event in
            guard case .changed(_, let new)? = event.configurationChange else { return false }
            return new.scope == .allLinks && new.family == .ipv4 && new.forwarding == true
        })
        #expect(subscription.state.configurations[key]?.ignoresRoutesWithLinkdown == true)
    }

    /// With `ignore_routes_with_linkdown`, the kernel reports the next hop of a link without
    /// carrier as dead, and lookups pass it over: the setting's change re-reads the default
    /// routes at once, and their next hop's mark changes with no route message.
    @Test func ignoringRoutesWithLinkdownMarksTheRoutesDeadAtOnce() throws {
        let ns = try pair("ccdead")
        defer { ns.delete() }
        try ns.batch(["route add default via 10.1.0.2 dev va", "link set vb down"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        func defaultRoute() -> Route? { subscription.state.defaultRoutes.values.first { $0.family == .ipv4 } }
        #expect(eventually { defaultRoute()?.flags.contains(.linkDown) == true })
        #expect(defaultRoute()?.flags.contains(.dead) == false)
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=1"])
        #expect(eventually { defaultRoute()?.flags.contains(.dead) == true }, "\(String(describing: defaultRoute()))")
        _ = try ns.exec(["sysctl", "-qw", "net.ipv4.conf.all.ignore_routes_with_linkdown=0"])
        #expect(eventually { defaultRoute()?.flags.contains(.dead) == false }, "\(String(describing: defaultRoute()))")
    }

    /// Neighbours are followed only when asked for, through libnl's neighbour cache.
    @Test func neighboursComeChangeAndGo() throws {
        let ns = try pair("ccneigh")
        defer { ns.delete() }
        #expect(try NetlinkSubscription(namespace: .named(ns.name)).state.neighbors.isEmpty, "not followed by default")
        let subscription = try NetlinkSubscription(namespace: .named(ns.name), options: SubscriptionOptions(followsNeighbors: true))
        let recorder = EventRecorder(subscription)
        let gateway = IPAddress("10.1.0.9")!
        try ns.ip("neigh", "add", "10.1.0.9", "lladdr", "02:00:00:00:00:09", "dev", "va", "nud", "permanent")
        #expect(recorder.waitFor { event in
            guard case .new(let neighbor)? = event.neighborChange else { return false }
            return neighbor.address == gateway && neighbor.state == .permanent
                && neighbor.linkLayerAddress == HardwareAddress("02:00:00:00:00:09")
        })
        try ns.ip("neigh", "change", "10.1.0.9", "lladdr", "02:00:00:00:00:0a", "dev", "va", "nud", "stale")
        #expect(recorder.waitFor { event in
            guard case .changed(let old, let new)? = event.neighborChange else { return false }
            return new.address == gateway && old.state == .permanent && new.state == .stale
                && new.linkLayerAddress == HardwareAddress("02:00:00:00:00:0a")
        })
        try ns.ip("neigh", "del", "10.1.0.9", "dev", "va")
        #expect(recorder.waitFor { if case .removed(let n)? = $0.neighborChange { n.address == gateway } else { false } })
        #expect(eventually { subscription.state.neighbors.values.allSatisfy { $0.address != gateway } })
    }
}
