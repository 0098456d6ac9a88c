import Foundation
import Netlink
import NetnsTestSupport
import Testing

/// Link notifications and dumps are both parsed by libnl (with its attribute parser for the
/// alternative names). After each step of a tour of link kinds and changes, the links the
/// subscription built from notifications equal a fresh dump of the same namespace, field by
/// field; and what a dump reads must be what `ip -j link show` prints.
@Suite("Link messages parsed by libnl", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct LinkMessageTests {
    /// A tour of link kinds and changes; `elsewhere` is a second namespace, for a veth's peer.
    static func tour(elsewhere: String) -> [(String, [String])] {
        [
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
            // While both are up: the kernel tells of a down link's new names only with its next
            // message (`netdev_state_change` sends none for a link that is down).
            ("alternative names", ["link property add dev va altname uplink0 altname \(Self.longName)",
                                   "link property add dev vb altname peer0", "link property del dev va altname uplink0"]),
            ("down and carrier loss", ["link set va down", "link set vb down"]),
            ("port leaves the bridge", ["link set vb nomaster"]),
            ("a veth whose peer is in another namespace", ["link add vx type veth peer name vy netns \(elsewhere)"]),
            ("deletions", ["link del vxlan5", "link del tun7", "link del br0", "link del i0"]),
        ]
    }

    @Test func notificationsAgreeWithDumpsThroughATourOfLinks() throws {
        let ns = try TestNamespace("linkmsg")
        defer { ns.delete() }
        let elsewhere = try TestNamespace("linkmsgpeer")
        defer { elsewhere.delete() }
        let steps = Self.tour(elsewhere: elsewhere.name)
        let subscription = try expectAgreementThroughTour(in: ns, steps: steps, view: { $0.links.mapValues(comparable) })
        let links = subscription.state.links.values
        #expect(links.contains { $0.name == "vx" && $0.linkNamespaceID != nil }, "the peer's namespace id is read")
        #expect(links.contains { $0.name == "vx" && $0.linkNamespaceID != nil && $0.lowerLinkIndex != nil })
        #expect(links.contains { $0.name == "va" && $0.group == 42 }, "the interface group is read")
        #expect(links.allSatisfy { $0.name == "va" || $0.group == 0 }, "the others in the default group (i0, in group 7, was deleted)")
        #expect(links.first { $0.name == "va" }?.alternativeNames == [Self.longName], "the alternative name left, not the one deleted")
        #expect(subscription.state.link(named: "peer0")?.name == "vb")
    }

    /// The same tour, each link of each dump beside what `ip -j -d link show` prints of it: a
    /// check of the one parser that reads both dumps and notifications by another program.
    @Test func dumpsAgreeWithIproute2ThroughATourOfLinks() throws {
        let ns = try TestNamespace("linkip")
        defer { ns.delete() }
        let elsewhere = try TestNamespace("linkippeer")
        defer { elsewhere.delete() }
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        for (step, commands) in [("start", [])] + Self.tour(elsewhere: elsewhere.name) {
            try ns.batch(commands)
            // The dump and `ip` read a moment apart, while the kernel's link watch may still
            // be setting a new link's state: `expectAgreement` reads both again until they agree.
            expectAgreement(after: step, mine: {
                Dictionary(((try? connection.links()) ?? []).map { ($0.index, Iproute2Link($0)) }, uniquingKeysWith: { first, _ in first })
            }, truth: {
                let shown = try ns.ipJSON("-d", "link", "show")
                let indexes = Dictionary(shown.compactMap { entry in (entry["ifname"] as? String).map { ($0, entry["ifindex"] as? Int ?? -1) } },
                                         uniquingKeysWith: { first, _ in first })
                return Dictionary(shown.map { (Int32($0["ifindex"] as? Int ?? -1), Iproute2Link($0, indexes: indexes)) },
                                  uniquingKeysWith: { first, _ in first })
            })
        }
    }

    /// An alternative name as long as the kernel allows (`ALTIFNAMSIZ` less its NUL).
    static let longName = "enp0s20f0u10u4u2c2i" + String(repeating: "x", count: 108)

    /// What a dump reads of each link's alternative names is what iproute2 prints, in its order.
    @Test func alternativeNamesAreReadAsIproute2ShowsThem() throws {
        let ns = try TestNamespace("altnames")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link add i0 type ifb",
                      "link property add dev va altname first0 altname \(Self.longName) altname third0",
                      "link property add dev vb altname second0", "link property del dev va altname third0"])
        let connection = try NetlinkConnection(namespace: .named(ns.name))
        let links = try connection.links()
        let shown = try ns.ipJSON("link", "show")
        #expect(shown.count == links.count && links.count == 4)
        for object in shown {
            let name = try #require(object["ifname"] as? String)
            #expect(links.first { $0.name == name }?.alternativeNames == object["altnames"] as? [String] ?? [], "\(name)")
        }
        #expect(links.first { $0.name == "va" }?.alternativeNames == ["first0", Self.longName])
        #expect(links.first { $0.name == "i0" }?.alternativeNames == [])
        #expect(links.first { $0.isNamed("second0") }?.name == "vb")
        #expect(links.first { $0.isNamed(Self.longName) }?.name == "va")
        #expect(links.first { $0.isNamed("third0") } == nil)
        // One link asked of the kernel, by index, name or alternative name (a long one through
        // `IFLA_ALT_IFNAME`): the same value as in the dump.
        let va = try #require(links.first { $0.name == "va" })
        #expect(try connection.link(index: va.index) == va)
        for name in ["va", "first0", Self.longName] {
            #expect(try connection.link(named: name) == va, "\(name.prefix(20))")
        }
        #expect(try connection.link(named: "second0")?.name == "vb")
        for missing in ["third0", "nosuch0", "", Self.longName + "x", "va\u{0}"] {
            #expect(try connection.link(named: missing) == nil, "\(missing.prefix(20))")
        }
        #expect(try connection.link(index: 999_999) == nil)
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

/// What `ip -j -d link show` prints of a link, in its terms, and the same read from a ``Link``.
private struct Iproute2Link: Equatable, CustomStringConvertible {
    var name = "", mtu = 0, flags: Set<String> = [], noCarrier = false, operState = "", master: Int?, lower: Int?
    var namespaceID: Int?, group = "", address: String?, kind: String?, altnames: [String] = [], linkType = ""

    /// iproute2's flag names (`print_link_flags`), which print every flag but `RUNNING`.
    static let flagNames: [(InterfaceFlags, String)] = [
        (.up, "UP"), (.broadcast, "BROADCAST"), (.debug, "DEBUG"), (.loopback, "LOOPBACK"),
        (.pointToPoint, "POINTOPOINT"), (.noTrailers, "NOTRAILERS"), (.noARP, "NOARP"), (.promiscuous, "PROMISC"),
        (.allMulticast, "ALLMULTI"), (.master, "MASTER"), (.slave, "SLAVE"), (.multicast, "MULTICAST"),
        (.portSelect, "PORTSEL"), (.autoMedia, "AUTOMEDIA"), (.dynamic, "DYNAMIC"), (.lowerUp, "LOWER_UP"),
        (.dormant, "DORMANT"), (.echo, "ECHO"),
    ]

    init(_ entry: [String: Any], indexes: [String: Int]) {
        name = entry["ifname"] as? String ?? ""
        mtu = entry["mtu"] as? Int ?? -1
        let printed = Set(entry["flags"] as? [String] ?? [])
        flags = printed.subtracting(["NO-CARRIER", "M-DOWN"])
        noCarrier = printed.contains("NO-CARRIER")
        operState = entry["operstate"] as? String ?? ""
        master = (entry["master"] as? String).flatMap { indexes[$0] }
        // The lower link: by name in this namespace, by index (and namespace id) in another.
        lower = (entry["link"] as? String).flatMap { indexes[$0] } ?? entry["link_index"] as? Int
        namespaceID = entry["link_netnsid"] as? Int
        group = entry["group"] as? String ?? ""
        address = entry["address"] as? String
        kind = (entry["linkinfo"] as? [String: Any])?["info_kind"] as? String
        altnames = entry["altnames"] as? [String] ?? []
        linkType = entry["link_type"] as? String ?? ""
    }

    init(_ link: Link) {
        name = link.name
        mtu = Int(link.mtu)
        flags = Set(Self.flagNames.filter { link.flags.contains($0.0) }.map(\.1))
        noCarrier = link.isUp && !link.isRunning
        operState = link.operState.description.uppercased()
        master = link.masterIndex.map(Int.init)
        lower = link.lowerLinkIndex.map(Int.init)
        namespaceID = link.linkNamespaceID.map(Int.init)
        group = link.group == 0 ? "default" : String(link.group)
        address = link.hardwareAddress?.description
        kind = link.kind
        altnames = link.alternativeNames
        linkType = link.arphrdType.description
    }

    var description: String {
        "\(name) mtu \(mtu) \(flags.sorted())\(noCarrier ? " NO-CARRIER" : "") \(operState) master \(master ?? -1) "
            + "link \(lower ?? -1) netnsid \(namespaceID ?? -1) group \(group) \(address ?? "-") \(kind ?? "-") "
            + "\(linkType) altnames \(altnames.count)"
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
