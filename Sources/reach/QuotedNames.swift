import Netlink

/// The quoted JSON strings of the names that every route line repeats (its family, table, type,
/// protocol and scope: `"ipv4"`, `"main"`, `"unicast"`, `"boot"`, `"universe"`), each made from
/// its value's description the first time it is written, then copied. A description and its
/// quoting cost some 200 to 350 instructions a field (callgrind of `reach events --json` under
/// a churn of route changes), five times a line, for the same few words.
///
/// The same for the arrays of flag names of links and routes (`["up","broadcast","running"]`):
/// the array of names, its growth and the quoting of each name cost a changed link's line some
/// 5 000 instructions for its two sets of flags (callgrind of a link flip).
struct QuotedNames {
    /// The kinds of one-byte values whose names are kept; each description must depend on the
    /// raw value alone.
    enum Kind: Int, CaseIterable {
        case family, table, type, routeProtocol, scope
    }

    /// `"name"` of each kind's raw value, at `kind * 256 + rawValue`; nil until first written.
    private var quoted: [[UInt8]?] = []
    /// `["name",...]` of each set of flags written so far, by its type and raw value.
    private var flagSets: [FlagSetKey: [UInt8]] = [:]

    /// How many sets of flags (of links and routes together) are kept quoted: a set seen after
    /// that is quoted each time. A namespace's links and routes show a handful.
    static let flagSetsKept = 128

    /// Appends the quoted name of `rawValue` of `kind`, quoting `name`'s description the first
    /// time.
    mutating func append<Name: CustomStringConvertible>(_ kind: Kind, _ rawValue: UInt8, _ name: Name, to out: ByteBuffer) {
        if quoted.isEmpty { quoted = Array(repeating: nil, count: Kind.allCases.count * 256) }
        let slot = kind.rawValue &* 256 &+ Int(rawValue)
        if quoted[slot] == nil {
            var bytes: [UInt8] = []
            JSON.quote(name.description, into: &bytes)
            quoted[slot] = bytes
        }
        quoted[slot].unsafelyUnwrapped.withUnsafeBufferPointer { out.append(bytes: $0) }
    }

    /// Appends the JSON array of the names of `flags`, made from its names the first time.
    mutating func append<Flags: NamedFlags>(_ flags: Flags, to out: ByteBuffer) {
        // Most routes have none: no lookup (its hashing costs some 300 instructions).
        guard flags.rawValue != 0 else {
            out.append(UInt8(ascii: "["))
            out.append(UInt8(ascii: "]"))
            return
        }
        let key = FlagSetKey(type: ObjectIdentifier(Flags.self), rawValue: flags.rawValue)
        if let bytes = flagSets[key] {
            bytes.withUnsafeBufferPointer { out.append(bytes: $0) }
            return
        }
        var bytes: [UInt8] = [UInt8(ascii: "[")]
        for (i, name) in flags.names.enumerated() {
            if i > 0 { bytes.append(UInt8(ascii: ",")) }
            JSON.quote(name, into: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        bytes.withUnsafeBufferPointer { out.append(bytes: $0) }
        if flagSets.count < Self.flagSetsKept { flagSets[key] = bytes }
    }

    private struct FlagSetKey: Hashable {
        let type: ObjectIdentifier
        let rawValue: UInt32
    }
}

/// Flags whose names ``QuotedNames`` keeps quoted: a link's and a route's.
protocol NamedFlags {
    /// The flags' bits.
    var rawValue: UInt32 { get }
    /// The names of the set flags, in bit order.
    var names: [String] { get }
}

extension InterfaceFlags: NamedFlags {}
extension RouteFlags: NamedFlags {}
