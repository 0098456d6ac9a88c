/// The oracle for host names in tests: RFC 1123 names as `ReachabilityTarget(parsing:)`
/// documents them (one trailing dot allowed, at most 253 bytes without it, labels of 1 to 63
/// ASCII letters, digits, `-` or `_`, not starting or ending with `-`). Written independently of
/// the parser, so that the two can be compared.
public func isRFC1123HostName(_ text: String) -> Bool {
    var bytes = Array(text.utf8)
    if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
    guard !bytes.isEmpty, bytes.count <= 253 else { return false }
    return bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).allSatisfy { label in
        (1...63).contains(label.count) && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
            && label.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): return true
                default: return false
                }
            }
    }
}
