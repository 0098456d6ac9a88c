import Glibc
import Netlink
import PropertyBased
import Testing

/// The address-literal parsers (`IPv4Address(_:)`, `IPv6Address(_:)`, `IPAddress(_:)`,
/// `IPNetwork(_:)`) against glibc's `inet_pton` as the oracle.
///
/// Property: for any string (ASCII with controls and NUL, any Unicode, text made mostly of
/// digits, hex digits, dots, colons, `%`, brackets and slashes, mutations of valid addresses,
/// strings of thousands of characters) a parser never crashes and accepts exactly what
/// `inet_pton` accepts for the whole string (a string with NUL in it is no C string, so
/// nothing); an accepted value has the octets `inet_pton` wrote, and its `description` parses
/// back to the same value and is canonical (formatting it again gives the same text).
@Suite("Bad input: address literals")
struct AddressLiteralTests {
    // MARK: The oracle

    /// The 4 or 16 bytes `inet_pton` writes for the whole of `text`, or nil if it refuses it.
    static func pton(_ family: Int32, _ text: String) -> [UInt8]? {
        guard !text.utf8.contains(0) else { return nil }   // C would see only the part before NUL
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(family, text, &bytes) == 1 else { return nil }
        return Array(bytes.prefix(family == AF_INET ? 4 : 16))
    }

    /// What `IPAddress(_:)` should accept: either family, or IPv6 in brackets.
    static func addressOracle(_ text: String) -> [UInt8]? {
        if let bytes = pton(AF_INET, text) ?? pton(AF_INET6, text) { return bytes }
        guard text.hasPrefix("["), text.hasSuffix("]"), text.utf8.count >= 2 else { return nil }
        return pton(AF_INET6, String(decoding: text.utf8.dropFirst().dropLast(), as: UTF8.self))
    }

    /// What `IPNetwork(_:)` should accept: `ADDRESS` or `ADDRESS/LENGTH`, LENGTH one to three
    /// ASCII digits, at most the family's width.
    static func networkOracle(_ text: String) -> (octets: [UInt8], prefix: UInt8)? {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let octets = addressOracle(String(parts[0])) else { return nil }
        let width = octets.count * 8
        guard parts.count == 2 else { return (octets, UInt8(width)) }
        let digits = parts[1].utf8
        guard (1...3).contains(digits.count), digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let length = Int(parts[1]), length <= width else { return nil }
        return (octets, UInt8(length))
    }

    // MARK: The checks

    /// Checks every parser on `text` against the oracle.
    static func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = text.count > 60 ? "\(text.prefix(60).debugDescription)… (\(text.utf8.count) bytes)" : text.debugDescription
        let v4 = IPv4Address(text)
        #expect(v4?.octets == pton(AF_INET, text), "IPv4Address(\(shown))", sourceLocation: sourceLocation)
        if let v4 {
            #expect(v4.description == text, "IPv4Address(\(shown)).description", sourceLocation: sourceLocation)
        }
        let v6 = IPv6Address(text)
        #expect(v6?.octets == pton(AF_INET6, text), "IPv6Address(\(shown))", sourceLocation: sourceLocation)
        if let v6 {
            #expect(IPv6Address(v6.description) == v6, "IPv6Address(\(shown)) round trip", sourceLocation: sourceLocation)
            #expect(IPv6Address(v6.description)?.description == v6.description, sourceLocation: sourceLocation)
        }
        let address = IPAddress(text)
        #expect(address?.octets == addressOracle(text), "IPAddress(\(shown))", sourceLocation: sourceLocation)
        if let address {
            #expect(IPAddress(address.description) == address, "IPAddress(\(shown)) round trip", sourceLocation: sourceLocation)
        }
        let network = IPNetwork(text)
        let expected = networkOracle(text)
        #expect(network?.address.octets == expected?.octets && network?.prefixLength == expected?.prefix,
                "IPNetwork(\(shown)) gave \(network.map(String.init(describing:)) ?? "nil")", sourceLocation: sourceLocation)
        if let network {
            #expect(IPNetwork(network.description) == network, "IPNetwork(\(shown)) round trip", sourceLocation: sourceLocation)
        }
    }

    /// Inputs known to trip address parsers, each checked against the oracle; the test also
    /// asserts the expected verdict of some, so that a broken oracle cannot pass silently.
    static let corpus: [String] = [
        "", " ", ".", ":", "::", ":::", "/", "[]", "[", "]", "[::]", "[::1]", "[::1", "::1]", "[[::1]]",
        "0.0.0.0", "1.2.3.4", "255.255.255.255", "256.1.1.1", "1.2.3.256", "01.2.3.4", "1.2.3.04", "00.0.0.0",
        "1.2.3", "1.2", "1", "1.2.3.4.", ".1.2.3.4", "1.2.3.4.5", "1..2.3", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4\n",
        "0x1.2.3.4", "0x01020304", "16909060", "1.2.3.-4", "+1.2.3.4", "1.2.3.4/", "1.2.3.4/0", "1.2.3.4/32",
        "1.2.3.4/33", "1.2.3.4/+8", "1.2.3.4/-0", "1.2.3.4/008", "1.2.3.4/0008", "1.2.3.4/8/8", "1.2.3.4/ 8",
        "1.2.3.4/８", "１.２.３.４", "١.٢.٣.٤", "1.2.3.4\u{301}", "[1.2.3.4]",
        "::1", "::ffff:1.2.3.4", "::ffff:1.2.3", "::ffff:01.2.3.4", "::1.2.3.4", "1.2.3.4::", "1::2::3",
        "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8::",
        "00000::1", "0000::1", "fffff::", "FFFF::", "g::", "2001:db8::1/64", "2001:db8::1/129", "[::1]/128",
        "::/0", "fe80::1%eth0", "%eth0", "fe80::1%", "fe80::1%1", "fe80::1%25eth0", "[fe80::1%eth0]",
        "0000:0000:0000:0000:0000:ffff:255.255.255.255", "0000:0000:0000:0000:0000:ffff:255.255.255.2555",
        "0000:0000:0000:0000:0000:0000:0000:0000", "0000:0000:0000:0000:0000:0000:0000:00000",
        "1.2.3.4\u{0}", "\u{0}1.2.3.4", "1.2.3.4\u{0}junk", "::1\u{0}x", "[::1]\u{0}", "10.0.0.0/8\u{0}9",
        "1.2.3.4\u{0}/8", "\u{0}", String(repeating: "1", count: 10_000), String(repeating: ":", count: 10_000),
        String(repeating: "1.", count: 5_000), String(repeating: "f:", count: 5_000) + ":",
        String(repeating: "0", count: 10_000) + "1.2.3.4", "1.2.3.4/" + String(repeating: "0", count: 10_000),
    ]

    @Test func corpusAgreesWithInetPton() {
        for text in Self.corpus { Self.check(text) }
        // The oracle itself, on a few verdicts beyond doubt.
        #expect(Self.pton(AF_INET, "1.2.3.4") == [1, 2, 3, 4])
        #expect(Self.pton(AF_INET, "01.2.3.4") == nil)
        #expect(Self.addressOracle("[::1]")?.last == 1)
        #expect(Self.networkOracle("10.0.0.0/+8") == nil)
        // Regressions: text after a NUL was ignored ("1.2.3.4\0junk" parsed as 1.2.3.4), and
        // a prefix length with a sign ("/+8", "/-0") was accepted.
        #expect(IPAddress("1.2.3.4\u{0}junk") == nil)
        #expect(IPv6Address("::1\u{0}x") == nil)
        #expect(IPNetwork("10.0.0.0/+8") == nil)
        #expect(IPNetwork("10.0.0.0/-0") == nil)
    }

    @Test func randomASCIIAgreesWithInetPton() async {
        await propertyCheck(count: 300, input: Strings.ascii) { Self.check($0) }
    }

    @Test func randomUnicodeAgreesWithInetPton() async {
        await propertyCheck(count: 200, input: Strings.unicode) { Self.check($0) }
    }

    @Test func addressAlphabetAgreesWithInetPton() async {
        await propertyCheck(count: 300, input: Strings.from("0123456789.", length: 0...18)) { Self.check($0) }
        await propertyCheck(count: 300, input: Strings.from("0123456789abcdefABCDEF:.", length: 0...46)) { Self.check($0) }
        await propertyCheck(count: 300, input: Strings.from("0123:.%/[] f\u{0}", length: 0...24)) { Self.check($0) }
    }

    /// Valid addresses with one character inserted, deleted or replaced: the inputs nearest to
    /// the boundary between accepted and refused.
    @Test func mutatedAddressesAgreeWithInetPton() async {
        let valid = zip(Gen.uint32(), Gen.uint64(in: 0...0xffff), Gen.uint64(), Gen.int(in: 0...3))
            .map { v4, high, low, shape -> String in
                switch shape {
                case 0: return IPv4Address(rawValue: v4).description
                case 1: return IPv6Address(high: high << 48, low: low).description
                case 2: return "::ffff:" + IPv4Address(rawValue: v4).description
                default: return IPv6Address(high: high, low: low >> 16).description + "/" + String(v4 % 140)
                }
            }
        let edit = zip(Gen.int(in: 0...2), Gen.int(in: 0...100),
                       Gen<Character?>.element(of: Array("0123456789afAF:./[]%-+ \u{0}x")).map { $0! })
        await propertyCheck(count: 300, input: valid, edit) { text, edit in
            Self.check(text)
            Self.check(mutate(text, edit: edit.0, position: edit.1, with: edit.2))
        }
    }

    @Test func veryLongStringsAreRefused() async {
        await propertyCheck(count: 60, input: Strings.long("0123456789abcdef.:/[]")) { text in
            Self.check(text)
            #expect(IPAddress(text) == nil && IPNetwork(text) == nil)
        }
    }
}
