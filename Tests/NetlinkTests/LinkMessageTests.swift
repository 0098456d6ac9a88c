import Foundation
import Netlink
import NetnsTestSupport
import Testing

/// The subscription reads link notifications itself (`Link(message:)`), not through libnl's
/// parser; libnl still reads every dump. The two must agree: after each step of a tour of link
/// kinds and changes, the links the subscription built from notifications equal a fresh libnl
/// dump of the same namespace, field by field.
@Suite("Link messages read from the kernel's bytes", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct LinkMessageTests {
    @Test func notificationsAgreeWithLibnlDumpsThroughATourOfLinks() throws {
        let ns = try TestNamespace("linkmsg")
        defer { ns.delete() }
        let elsewhere = try TestNamespace("linkmsgpeer")
        defer { elsewhere.delete() }
        let steps: [(String, [String])] = [
            ("veth pair", ["link add va type veth peer name vb", "link set va up", "link set vb up"]),
            ("bridge with a port", ["link add br0 type bridge", "link set br0 up", "link set vb master br0"]),
            // The kinds this kernel has (no dummy, vlan or macvlan modules here): ifb, and a
            // vxlan on top of a veth, whose lower link is read.
            ("ifb, and vxlan on a veth", ["link add i0 type ifb", "link set i0 up",
                                          "link add vx0 type vxlan id 5 dev va dstport 4789", "link set vx0 up"]),
            ("tun without a hardware address", ["tuntap add dev tun7 mode tun"]),
            ("mtu, address, rename", ["link set i0 mtu 1400", "link set va address 02:00:00:00:00:07",
                                      "link set vx0 down", "link set vx0 name vxlan5", "link set vxlan5 up"]),
            ("interface groups", ["link set i0 group 7", "link set va group 42"]),
            ("down and carrier loss", ["link set va down", "link set vb down"]),
            ("port leaves the bridge", ["link set vb nomaster"]),
            ("a veth whose peer is in another namespace", ["link add vx type veth peer name vy netns \(elsewhere.name)"]),
            ("deletions", ["link del vxlan5", "link del tun7", "link del br0", "link del i0"]),
        ]
        let subscription = try expectAgreementThroughTour(in: ns, steps: steps, view: { $0.links.mapValues(comparable) })
        let links = subscription.state.links.values
        #expect(links.contains { $0.name == "vx" && $0.linkNamespaceID != nil }, "the peer's namespace id is read")
        #expect(links.contains { $0.name == "vx" && $0.linkNamespaceID != nil && $0.lowerLinkIndex != nil })
        #expect(links.contains { $0.name == "va" && $0.group == 42 }, "the interface group is read")
        #expect(links.allSatisfy { $0.name == "va" || $0.group == 0 }, "the others in the default group (i0, in group 7, was deleted)")
    }

    @Test func truncatedAndCorruptedLinkMessagesNeverOverrun() throws {
        // A real message: a veth's RTM_NEWLINK, taken from a dump of a namespace of our own.
        let ns = try TestNamespace("linkbytes")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb"])
        let message = try linkMessageBytes(in: ns)
        #expect(message.count > 100)
        message.withUnsafeBytes { whole in
            #expect(Link(payload: UnsafeRawBufferPointer(rebasing: whole[16...]))?.name == "va")
        }
        // Every truncation, and every single-byte change, parses or is refused.
        feedEveryTruncationAndByteChange(of: message) { _ = Link(payload: $0) }
    }
}

/// A link as compared here: the carrier of a link that is down is left out, because the kernel
/// changes it without a notification (a tun device is registered with its carrier on, then
/// turned off while down; link notifications of a down device are not sent), whoever parses.
private func comparable(_ link: Link) -> Link {
    guard !link.flags.contains(.up) else { return link }
    var link = link
    link.carrier = nil
    return link
}

/// The bytes of the RTM_NEWLINK message for link `va` in a link dump of `ns`, asked of the
/// kernel on a bare socket created in the namespace.
private func linkMessageBytes(in ns: TestNamespace) throws -> [UInt8] {
    let namespace = try NetworkNamespace.named(ns.name)
    return try namespace.perform { () throws(NetlinkError) -> [UInt8] in
        var found: [UInt8]?
        try rawLinkDump { type, _, message in
            if type == 16 /* RTM_NEWLINK */,
               message.withUnsafeBytes({ Link(payload: UnsafeRawBufferPointer(rebasing: $0[16...]))?.name }) == "va" {
                found = message
            }
            return found == nil
        }
        guard let found else { throw NetlinkError(code: NetlinkError.failure.code, context: "va not in the dump") }
        return found
    }
}
