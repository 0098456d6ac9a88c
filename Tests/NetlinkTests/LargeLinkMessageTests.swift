import Foundation
@testable import Netlink
import NetnsTestSupport
import Testing

/// A link with hundreds of alternative names has a message of some 66 KiB: more than the
/// sockets' first buffers (64 KiB), and the kernel makes a link dump's datagrams as large as
/// its largest link. Such a link must be read whole, wherever it is read, and never be lost or
/// make a read wait forever.
@Suite("Link messages larger than the buffers", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct LargeLinkMessageTests {
    /// 127-byte names (the longest the kernel takes), as many as it takes for one link (about
    /// 496 on Linux 6.18: the property list must stay under 64 KiB), less a few.
    static func names(_ count: Int, prefix: String = "n") -> [String] {
        (0..<count).map { prefix + String(format: "%03d", $0) + String(repeating: "x", count: 127 - prefix.utf8.count - 3) }
    }

    /// `ip -batch` lines that give `link` these alternative names, five to a line (iproute2's
    /// request holds about seven of 127 bytes, and leaves out the others without a word).
    static func adding(_ names: [String], to link: String) -> [String] {
        stride(from: 0, to: names.count, by: 5).map { start in
            "link property add dev \(link)" + names[start..<min(start + 5, names.count)].map { " altname \($0)" }.joined()
        }
    }

    /// Whether `link` has exactly `names`, said briefly: a failure must not print 60 KiB.
    static func has(_ link: Link?, _ names: [String]) -> Bool { link?.alternativeNames == names }

    @Test func aDumpAndALinkRequestReadAHugeLinkWhole() throws {
        let ns = try TestNamespace("hugelink")
        defer { ns.delete() }
        let names = Self.names(494)
        try ns.batch(["link add va type veth peer name vb"] + Self.adding(names, to: "va"))
        let namespace = try NetworkNamespace.named(ns.name)
        let links = try NetlinkConnection(namespace: namespace).links()
        #expect(Self.has(links.first { $0.name == "va" }, names),
                "\(links.first { $0.name == "va" }?.alternativeNames.count ?? -1) of \(names.count) names")
        #expect(links.map(\.name).sorted() == ["lo", "va", "vb"])
        let va = try ns.index(of: "va")
        // A new socket asked for the one link: libnl reads the answer whole, however large. A
        // missing index is nil.
        let (read, missing) = try namespace.perform { () throws(NetlinkError) -> (Link?, Link?) in
            let socket = try RequestSocket(namespace: namespace)
            return (try socket.link(index: va), try socket.link(index: 999_999))
        }
        #expect(Self.has(read, names), "\(read?.alternativeNames.count ?? -1) of \(names.count) names")
        #expect(missing == nil)
    }

    /// A notification larger than libnl's first buffer is read whole (libnl peeks at each
    /// datagram's size first): nothing is lost and nothing read again.
    @Test func aSubscriptionFollowsALinkThatGrowsPastTheBuffer() throws {
        let ns = try TestNamespace("hugesub")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.9.0.1/24 dev va"])
        let namespace = try NetworkNamespace.named(ns.name)
        let subscription = try NetlinkSubscription(namespace: namespace)
        let recorder = EventRecorder(subscription)
        let kernel = try NetlinkConnection(namespace: namespace)
        // Up, so that each addition is told (the kernel tells of none for a link that is down).
        let names = Self.names(494)
        try ns.batch(Self.adding(names, to: "va"))
        #expect(eventually { Self.has(subscription.state.link(named: "va"), names) })
        try ns.ip("link", "set", "va", "mtu", "1400")
        #expect(eventually { subscription.state.link(named: "va")?.mtu == 1400 }, "a later change of the link is read")
        #expect(eventually { agrees(subscription.state, kernel) })
        #expect(!recorder.all.contains { $0.linkChange.map { if case .removed = $0 { true } else { false } } ?? false },
                "the link was never reported gone")
        let rereads = recorder.all.filter { if case .resynchronized = $0 { true } else { false } }
        #expect(rereads.isEmpty, "\(rereads.count) re-reads")
        #expect(subscription.termination == nil)
    }

    /// The re-read of one link (its lower link left the namespace) reads a link that grew past
    /// the buffer while it was down, which the kernel did not tell, and the subscription goes on.
    @Test func theRereadOfOneLinkReadsAHugeLinkAndGoesOn() throws {
        let ns = try TestNamespace("hugeone")
        defer { ns.delete() }
        let elsewhere = try TestNamespace("hugeonepeer")
        defer { elsewhere.delete() }
        try ns.batch(["link add va type veth peer name vb"])
        let namespace = try NetworkNamespace.named(ns.name)
        let subscription = try NetlinkSubscription(namespace: namespace)
        let recorder = EventRecorder(subscription)
        let names = Self.names(494)
        try ns.batch(Self.adding(names, to: "va"))
        try ns.ip("link", "set", "vb", "netns", elsewhere.name)
        #expect(eventually { Self.has(subscription.state.link(named: "va"), names) })
        try ns.ip("link", "add", "vc", "type", "veth", "peer", "name", "vd")
        #expect(eventually { subscription.state.link(named: "vd") != nil }, "later changes are still read")
        // Read by the one-link request itself, not by a re-read of everything after it failed.
        #expect(!recorder.all.contains { if case .resynchronized = $0 { true } else { false } })
        #expect(subscription.termination == nil)
    }
}
