/// The oracle for host names in tests: RFC 1123 names as `ReachabilityTarget(parsing:)`
/// documents them (one trailing dot allowed, at most 253 bytes without it, labels of 1 to 63
/// ASCII letters, digits, `-` or `_`, not starting or ending with `-`), less the names that read
/// as numbers (a last label of digits only, or up to four labels that are each a decimal, octal
/// or `0x` hexadecimal number: `inet_aton`'s shorthand). Written independently of the parser, so
/// that the two can be compared.
public func isRFC1123HostName(_ text: String) -> Bool {
    var bytes = Array(text.utf8)
    if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
    guard !bytes.isEmpty, bytes.count <= 253 else { return false }
    let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    let wellFormed = labels.allSatisfy { label in
        (1...63).contains(label.count) && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
            && label.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                     UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"): return true
                default: return false
                }
            }
    }
    return wellFormed && !readsAsNumber(labels.map { String(decoding: $0, as: UTF8.self) })
}

/// Whether labels read as an IPv4 address in `inet_aton`'s notation, or end in a numeric
/// top-level label.
private func readsAsNumber(_ labels: [String]) -> Bool {
    let decimal = { (label: String) in !label.isEmpty && label.allSatisfy { ("0"..."9").contains($0) } }
    let hexadecimal = { (label: String) in
        let lower = label.lowercased()
        return lower.hasPrefix("0x") && lower.dropFirst(2).allSatisfy { "0123456789abcdef".contains($0) }
    }
    if let last = labels.last, decimal(last) { return true }
    return labels.count <= 4 && labels.allSatisfy { decimal($0) || hexadecimal($0) }
}
