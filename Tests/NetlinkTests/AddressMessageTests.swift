import Foundation
import Netlink
import NetnsTestSupport
import Testing

/// Address notifications and dumps are both parsed by libnl. After each step of a tour of
/// address kinds and changes, the addresses the subscription built from notifications equal a
/// fresh dump of the same namespace, field by field.
@Suite("Address messages parsed by libnl", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct AddressMessageTests {
    @Test func notificationsAgreeWithLibnlDumpsThroughATourOfAddresses() throws {
        let ns = try TestNamespace("addrmsg")
        defer { ns.delete() }
        let steps: [(String, [String])] = [
            // Link-local IPv6 addresses appear, tentative, then lose the flag after DAD.
            ("veth pair up", ["link add va type veth peer name vb", "link set va up", "link set vb up"]),
            ("IPv4 with a broadcast and a label", ["address add 10.1.0.1/24 brd + dev va label va:one"]),
            ("IPv4 point-to-point, with a peer", ["address add 10.9.0.1 peer 10.9.0.2/32 dev va"]),
            // noprefixroute is 0x200: only in IFA_FLAGS, not in the header's eight bits.
            ("IPv6 with flags past the header's", ["address add 2001:db8:1::1/64 dev va nodad noprefixroute"]),
            ("IPv6 with lifetimes", ["address add 2001:db8:2::1/64 dev va nodad valid_lft 3600 preferred_lft 1800"]),
            ("deprecated by a change", ["address change 2001:db8:2::1/64 dev va valid_lft 3600 preferred_lft 0"]),
            ("a secondary IPv4 address", ["address add 10.1.0.2/24 dev va"]),
            ("the primary goes", ["address del 10.1.0.1/24 dev va"]),
            ("an address on the peer", ["address add 10.1.0.9/24 dev vb"]),
            ("link down", ["link set va down"]),
            ("flush", ["address flush dev va"]),
            ("link deleted", ["link del va"]),
        ]
        try expectAgreementThroughTour(in: ns, steps: steps, view: { $0.addresses.mapValues(comparable) })
    }

    /// Lifetimes, the one field read as a countdown: finite ones are read from IFA_CACHEINFO.
    @Test func finiteLifetimesAreRead() throws {
        let ns = try TestNamespace("addrlife")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up"])
        let subscription = try NetlinkSubscription(namespace: .named(ns.name))
        try ns.batch(["address add 2001:db8:3::1/64 dev va nodad valid_lft 3600 preferred_lft 1800",
                      "address add 10.3.0.1/24 dev va"])
        let v6 = IPAddress("2001:db8:3::1")!, v4 = IPAddress("10.3.0.1")!
        #expect(eventually { subscription.state.addresses.values.contains { $0.address == v6 } })
        let address = try #require(subscription.state.addresses.values.first { $0.address == v6 })
        guard case .seconds(let valid) = address.validLifetime, case .seconds(let preferred) = address.preferredLifetime else {
            Issue.record("finite lifetimes read as \(address.validLifetime), \(address.preferredLifetime)")
            return
        }
        #expect(valid <= 3600 && valid > 3500 && preferred <= 1800 && preferred > 1700)
        #expect(eventually { subscription.state.addresses.values.contains { $0.address == v4 } })
        let permanent = try #require(subscription.state.addresses.values.first { $0.address == v4 })
        #expect(permanent.validLifetime == .forever && permanent.preferredLifetime == .forever)
    }

    @Test func truncatedAndCorruptedAddressMessagesNeverOverrun() throws {
        // A real message: a point-to-point IPv4 address with a label and a broadcast address,
        // taken from a dump of a namespace of our own (every attribute the parser reads).
        let ns = try TestNamespace("addrbytes")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb",
                      "address add 10.9.0.1 peer 10.9.0.2/32 brd 10.9.0.255 dev va label va:p"])
        let message = try addressMessageBytes(in: ns, address: IPAddress("10.9.0.1")!)
        #expect(message.count > 40)
        message.withUnsafeBytes { whole in
            let parsed = InterfaceAddress(payload: UnsafeRawBufferPointer(rebasing: whole[16...]))
            #expect(parsed?.peer == IPAddress("10.9.0.2") && parsed?.label == "va:p" && parsed?.prefixLength == 32)
            #expect(parsed?.broadcast == IPAddress("10.9.0.255") && parsed?.validLifetime == .forever)
        }
        // Every truncation, and every single-byte change, parses or is refused.
        feedEveryTruncationAndByteChange(of: message) { _ = InterfaceAddress(payload: $0) }
        // A message too short for its header is refused.
        #expect([UInt8](repeating: 0, count: 7).withUnsafeBytes { InterfaceAddress(payload: $0) } == nil)
    }
}

/// An address as compared here: the kernel counts lifetimes down, so a notification and a
/// later dump of the same finite lifetime differ; only whether it is finite is compared.
private func comparable(_ address: InterfaceAddress) -> InterfaceAddress {
    var address = address
    if case .seconds = address.validLifetime { address.validLifetime = .seconds(0) }
    if case .seconds = address.preferredLifetime { address.preferredLifetime = .seconds(0) }
    return address
}

/// The bytes of the RTM_NEWADDR message for `address` in an address dump of `ns`, asked of the
/// kernel on a bare socket created in the namespace.
private func addressMessageBytes(in ns: TestNamespace, address: IPAddress) throws -> [UInt8] {
    let namespace = try NetworkNamespace.named(ns.name)
    return try namespace.perform { () throws(NetlinkError) -> [UInt8] in
        var found: [UInt8]?
        try rawAddressDump { type, _, message in
            if type == 20 /* RTM_NEWADDR */,
               message.withUnsafeBytes({ InterfaceAddress(payload: UnsafeRawBufferPointer(rebasing: $0[16...]))?.address }) == address {
                found = message
            }
            return found == nil
        }
        guard let found else { throw NetlinkError(code: NetlinkError.failure.code, context: "\(address) not in the dump") }
        return found
    }
}
