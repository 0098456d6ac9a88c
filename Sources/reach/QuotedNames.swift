/// The quoted JSON strings of the names that every route line repeats (its family, table, type,
/// protocol and scope: `"ipv4"`, `"main"`, `"unicast"`, `"boot"`, `"universe"`), each made from
/// its value's description the first time it is written, then copied. A description and its
/// quoting cost some 200 to 350 instructions a field (callgrind of `reach events --json` under
/// a churn of route changes), five times a line, for the same few words.
struct QuotedNames {
    /// The kinds of one-byte values whose names are kept; each description must depend on the
    /// raw value alone.
    enum Kind: Int, CaseIterable {
        case family, table, type, routeProtocol, scope
    }

    /// `"name"` of each kind's raw value, at `kind * 256 + rawValue`; nil until first written.
    private var quoted: [[UInt8]?] = []

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
}
