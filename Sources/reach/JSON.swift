/// A JSON value whose objects keep their keys in the order written, so that the tool's output
/// reads the way the contract lists its fields.
enum JSON: Sendable {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    static func string(_ value: String?) -> JSON { value.map(JSON.string) ?? .null }
    static func int<T: BinaryInteger>(_ value: T?) -> JSON { value.map { .int(Int64($0)) } ?? .null }

    /// The compact serialisation, on one line.
    ///
    /// Written as UTF-8 bytes into one buffer and made a string once: appending to a `String`
    /// piece by piece cost more than everything else `reach events` does per line.
    var serialized: String {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write<Sink: ByteSink>(to out: inout Sink) {
        switch self {
        case .string(let s): JSON.quote(s, into: &out)
        case .int(let i): out.appendDecimal(i)
        case .bool(let b): out.append(b ? "true" : "false")
        case .null: out.append("null")
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (i, (key, value)) in fields.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSON.quote(key, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `s` as a JSON string, quoted and escaped.
    static func quote<Sink: ByteSink>(_ s: String, into out: inout Sink) {
        out.append(UInt8(ascii: "\""))
        // Most strings (names, addresses, flags) need no escaping, and are stored as UTF-8
        // (small ones inside the `String`): appended whole, without a copy of the string.
        let appended = s.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                return false
            }
            out.append(bytes: bytes)
            return true
        }
        if appended != true {
            for byte in s.utf8 {
                switch byte {
                case UInt8(ascii: "\""): out.append("\\\"")
                case UInt8(ascii: "\\"): out.append("\\\\")
                case UInt8(ascii: "\n"): out.append("\\n")
                case UInt8(ascii: "\r"): out.append("\\r")
                case UInt8(ascii: "\t"): out.append("\\t")
                case 0..<0x20:
                    let hex: StaticString = "0123456789abcdef"
                    out.append("\\u00")
                    out.append(hex.utf8Start[Int(byte >> 4)])
                    out.append(hex.utf8Start[Int(byte & 0xf)])
                default: out.append(byte)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

/// Writes one JSON value straight into bytes, key by key, with no ``JSON`` tree in between: for
/// the lines `reach events` prints by the hundred thousand during a route churn, where building
/// the tree (its arrays, tuples and strings) cost more than reading the kernel's messages.
/// The output is the same as the tree's ``JSON/write(to:)``.
struct JSONWriter {
    /// Where the bytes go (one copy per run, see ``ByteBuffer``).
    private var out: ByteBuffer
    /// Whether the next key or array element needs a comma before it.
    private var needsComma = false
    /// The names of route fields and the flag arrays written so far, quoted (see
    /// ``QuotedNames``).
    private var names = QuotedNames()
    /// The last fragment that ``fragment(_:_:)`` wrote: its key, whether a comma was due before
    /// it and after it, and its bytes.
    private var lastFragment: (key: ClassificationFields, commaBefore: Bool, commaAfter: Bool, bytes: [UInt8])?

    /// A writer with room for `capacity` bytes before its buffer grows.
    init(capacity: Int = 1024) { out = ByteBuffer(capacity: capacity) }

    /// Calls `body` with the bytes written so far (valid only during the call).
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try out.withBytes(body)
    }

    /// Forgets what was written, keeping the buffer's room.
    mutating func removeAll() {
        out.removeAll()
        needsComma = false
    }

    /// Starts an object (as a value, or as an array element).
    mutating func beginObject() {
        separate()
        out.append(UInt8(ascii: "{"))
        needsComma = false
    }

    mutating func endObject() {
        out.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Starts an array (as a value, or as an array element).
    mutating func beginArray() {
        separate()
        out.append(UInt8(ascii: "["))
        needsComma = false
    }

    mutating func endArray() {
        out.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"key":`; the value follows.
    mutating func key(_ key: StaticString) {
        out.appendQuoted(key, comma: needsComma, colon: true)
        needsComma = false
    }

    /// A string, or null.
    mutating func value(_ string: String?) {
        separate()
        if let string { JSON.quote(string, into: &out) } else { out.append("null") }
        needsComma = true
    }

    /// A string value whose characters `body` writes, known to need no escaping (digits,
    /// dots, colons): nothing is built before it is written.
    mutating func value(writing body: (inout ByteBuffer) -> Void) {
        separate()
        out.append(UInt8(ascii: "\""))
        body(&out)
        out.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// A string known when the tool was built, that needs no escaping.
    mutating func value(_ string: StaticString) {
        out.appendQuoted(string, comma: needsComma, colon: false)
        needsComma = true
    }

    /// The name of a value of `kind` (a route's family, table, type, protocol or scope) as a
    /// string: its description, quoted once per raw value under 256 and then copied.
    mutating func value<Name: RawRepresentable & CustomStringConvertible>(_ kind: QuotedNames.Kind, _ name: Name)
    where Name.RawValue: FixedWidthInteger {
        guard let rawValue = UInt8(exactly: name.rawValue) else { return value(name.description) }
        separate()
        names.append(kind, rawValue, name, to: out)
        needsComma = true
    }

    /// The names of the set `flags` as an array of strings, quoted once per set of flags (see
    /// ``QuotedNames``).
    mutating func value<Flags: NamedFlags>(flags: Flags) {
        separate()
        names.append(flags, to: out)
        needsComma = true
    }

    /// Writes the fields that `body` writes from `key`, or copies the bytes of the last fragment
    /// written this way when its key is equal. A changed link's line writes the same
    /// classification for its old and new versions, and a flapping link's lines write it again
    /// and again: its evidence's description and the rest cost some 5 900 instructions each time
    /// (callgrind of a link flip). The key is of one concrete type: compared as an `AnyHashable`,
    /// it cost more than the writing.
    mutating func fragment(_ key: ClassificationFields, _ body: (inout JSONWriter) -> Void) {
        if let last = lastFragment, last.commaBefore == needsComma, last.key == key {
            last.bytes.withUnsafeBufferPointer { out.append(bytes: $0) }
            needsComma = last.commaAfter
            return
        }
        let commaBefore = needsComma
        let start = out.count
        body(&self)
        let bytes = out.withBytes { Array($0[start...]) }
        lastFragment = (key, commaBefore, needsComma, bytes)
    }

    /// A boolean, or null.
    mutating func value(_ bool: Bool?) {
        separate()
        switch bool {
        case true?: out.append("true")
        case false?: out.append("false")
        case nil: out.append("null")
        }
        needsComma = true
    }

    /// An array of strings.
    mutating func value(names: [String]) {
        beginArray()
        for name in names { value(name) }
        endArray()
    }

    /// An integer, or null.
    mutating func value<T: BinaryInteger>(_ integer: T?) {
        separate()
        if let integer { out.appendDecimal(Int64(integer)) } else { out.append("null") }
        needsComma = true
    }

    /// A value built as a tree.
    mutating func value(_ json: JSON) {
        separate()
        json.write(to: &out)
        needsComma = true
    }

    /// The current UTC time in ISO 8601 (see ``iso8601Now()``), as a string value.
    mutating func valueNow() {
        separate()
        out.append(UInt8(ascii: "\""))
        appendISO8601Now(to: &out)
        out.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Adds a line of text as it is.
    mutating func append(line text: String) {
        out.append(utf8: text)
        newline()
    }

    /// Ends a line: the writer is ready for the next value, with no comma before it.
    mutating func newline() {
        out.append(UInt8(ascii: "\n"))
        needsComma = false
    }

    @inline(__always)
    private mutating func separate() {
        if needsComma { out.append(UInt8(ascii: ",")) }
    }
}
