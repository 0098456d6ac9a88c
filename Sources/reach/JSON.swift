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

    func write(to out: inout [UInt8]) {
        switch self {
        case .string(let s): JSON.quote(s, into: &out)
        case .int(let i): JSON.append(i, to: &out)
        case .bool(let b): out.append(contentsOf: b ? "true".utf8 : "false".utf8)
        case .null: out.append(contentsOf: "null".utf8)
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

    /// A decimal integer, digit by digit.
    static func append(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        let start = out.count
        repeat {
            out.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        out[start...].reverse()
    }

    static func quote(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Most strings (names, addresses, flags) need no escaping: append them whole.
            guard bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
                case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
                case UInt8(ascii: "\r"): out.append(contentsOf: "\\r".utf8)
                case UInt8(ascii: "\t"): out.append(contentsOf: "\\t".utf8)
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out.append(contentsOf: "\\u00".utf8)
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0xf)])
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
    /// The bytes written so far.
    private(set) var bytes: [UInt8]
    /// Whether the next key or array element needs a comma before it.
    private var needsComma = false

    /// A writer appending to `bytes`.
    init(appendingTo bytes: [UInt8] = []) { self.bytes = bytes }

    /// Starts an object (as a value, or as an array element).
    mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    /// Starts an array (as a value, or as an array element).
    mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"key":`; the value follows.
    mutating func key(_ key: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(contentsOf: "\":".utf8)
        needsComma = false
    }

    /// A string, or null.
    mutating func value(_ string: String?) {
        separate()
        if let string { JSON.quote(string, into: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        needsComma = true
    }

    /// A string known when the tool was built, that needs no escaping.
    mutating func value(_ string: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: string.utf8Start, count: string.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// An integer, or null.
    mutating func value<T: BinaryInteger>(_ integer: T?) {
        separate()
        if let integer { JSON.append(Int64(integer), to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
        needsComma = true
    }

    /// A value built as a tree.
    mutating func value(_ json: JSON) {
        separate()
        json.write(to: &bytes)
        needsComma = true
    }

    /// The current UTC time in ISO 8601 (see ``iso8601Now()``), as a string value.
    mutating func valueNow() {
        separate()
        bytes.append(UInt8(ascii: "\""))
        appendISO8601Now(to: &bytes)
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Adds a line of text as it is.
    mutating func append(line text: String) {
        bytes.append(contentsOf: text.utf8)
        newline()
    }

    /// Ends a line: the writer is ready for the next value, with no comma before it.
    mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
        needsComma = false
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
