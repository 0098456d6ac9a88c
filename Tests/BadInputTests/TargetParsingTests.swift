import Netlink
import NetnsTestSupport
import PropertyBased
import LinuxReachability
import Testing

/// `ReachabilityTarget(parsing:)`, the parser of command-line and configuration targets.
///
/// Property: for any string the parser never crashes and either returns a target or throws
/// `ReachabilityError.invalidTarget` carrying the text; it returns `.address` exactly for what
/// `IPAddress(_:)` accepts, `.host` exactly for RFC 1123 host names (checked by an independent
/// oracle: dot-separated labels of 1 to 63 letters, digits, `-` not at either end and `_`, at
/// most 253 bytes, one trailing dot allowed, which is dropped, and not read as a number: no
/// all-digit last label, not up to four C numbers), `.scopedAddress` exactly for an IPv6
/// literal, `%` and a name a Linux link can have (as `getaddrinfo` reads a scope), and throws
/// for everything else (an IPv4 literal with a scope among them):
/// empty text, spaces, control characters, non-ASCII, over-long names and labels. The error's
/// description is one line without control characters. Only the parser runs: nothing here
/// resolves a name.
@Suite("Bad input: reachability targets")
struct TargetParsingTests {
    /// Parses `text` and checks the outcome against the oracles.
    static func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = text.count > 60 ? "\(text.prefix(60).debugDescription)… (\(text.utf8.count) bytes)" : text.debugDescription
        do {
            let target = try ReachabilityTarget(parsing: text)
            if let address = IPAddress(text) {
                #expect(target == .address(address), "\(shown)", sourceLocation: sourceLocation)
            } else if let (address, scope) = scopedIPv6(text) {
                #expect(target == .scopedAddress(address, interface: scope), "\(shown)", sourceLocation: sourceLocation)
            } else {
                #expect(isRFC1123HostName(text), "\(shown) was accepted as \(target)", sourceLocation: sourceLocation)
                let name = text.hasSuffix(".") ? String(text.dropLast()) : text
                #expect(target == .host(name), "\(shown)", sourceLocation: sourceLocation)
            }
        } catch {
            // `error` is a ReachabilityError: the initializer's typed throws say so.
            #expect(error == .invalidTarget(text), "\(shown) threw \(error)", sourceLocation: sourceLocation)
            #expect(IPAddress(text) == nil && !isRFC1123HostName(text), "\(shown) was refused", sourceLocation: sourceLocation)
            #expect(isOneClearLine(error.description), "\(shown): \(error.description.debugDescription)",
                    sourceLocation: sourceLocation)
            #expect(error.description.utf8.count < 400, "\(shown): description of \(error.description.utf8.count) bytes",
                    sourceLocation: sourceLocation)
        }
    }

    /// The oracle of scoped addresses: an IPv6 literal, `%`, then 1 to 127 bytes of
    /// printable ASCII other than `/`, `:` and `%`, and not `.` or `..` (the kernel's
    /// `dev_valid_name`, where a `%` makes the kernel number the name; a link's name has at most
    /// 15 bytes, an alternative name 127).
    static func scopedIPv6(_ text: String) -> (IPAddress, String)? {
        let parts = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let address = IPv6Address(String(parts[0])) else { return nil }
        let scope = String(parts[1])
        guard (1...127).contains(scope.utf8.count), scope != ".", scope != "..",
              scope.unicodeScalars.allSatisfy({ (0x21...0x7e).contains($0.value) && $0 != "/" && $0 != ":" && $0 != "%" }) else { return nil }
        return (.v6(address), scope)
    }

    /// Host names, addresses and near misses; some verdicts are asserted outright, so that a
    /// wrong oracle cannot pass silently.
    static let corpus: [String] = [
        "", ".", "..", "a", "a.", "a..", ".a", "a..b", "-a", "a-", "a-b", "_a", "a_b", "1", "1.2.3", "1.2.3.4", "127.1", "010.0.0.1",
        "999.1.1.1", "0x7f.1", "0X7F", "0x", "a.123", "1.2.3.4.5", "1e100.net", "a.0x1f", "0x7f.a",
        "1.2.3.4.", "256.1.1.1", "::1", "[::1]", "[::1", "fe80::1%eth0", "fe80::1%2", "fe80::1%", "fe80::1%a/b", "fe80::1%..",
        "fe80::1%" + String(repeating: "e", count: 16), "fe80::1%" + String(repeating: "e", count: 127),
        "fe80::1%" + String(repeating: "e", count: 128), "fe80::1%eth0%1", "2001:db8::1%eth0", "10.0.0.1%eth0", "%eth0", "example.com", "EXAMPLE.COM.",
        "exa mple.com", " example.com", "example.com ", "exa\tmple", "exa\u{0}mple", "example.com\u{0}",
        "exa\u{7f}mple", "exa\nmple", "exa\r\nmple", "bücher.example", "xn--bcher-kva.example", "例え.jp",
        "e\u{301}xample", "a\u{2028}b", "a\u{85}b", "a\u{1b}[31mred", "a/b", "a:b", "a@b", "a%b", "*.example",
        String(repeating: "a", count: 63), String(repeating: "a", count: 64), String(repeating: "a", count: 63) + ".",
        Array(repeating: String(repeating: "a", count: 63), count: 4).joined(separator: "."),   // 255 bytes
        Array(repeating: String(repeating: "a", count: 62), count: 4).joined(separator: "."),   // 251 bytes
        String(repeating: "a.", count: 126) + "a", String(repeating: "a.", count: 127),       // 253 bytes, 254
        String(repeating: "a.", count: 127) + "a", String(repeating: "x", count: 10_000),
        "a" + String(repeating: "\u{301}", count: 5_000), String(repeating: "\u{0}", count: 100),
    ]

    @Test func corpusAgreesWithTheOracles() throws {
        for text in Self.corpus { Self.check(text) }
        #expect(isRFC1123HostName("example.com.") && isRFC1123HostName(String(repeating: "a.", count: 126) + "a"))
        #expect(!isRFC1123HostName(String(repeating: "a", count: 64)) && !isRFC1123HostName("exa mple"))
        #expect(!isRFC1123HostName(String(repeating: "a.", count: 127) + "a") && !isRFC1123HostName("bücher.example"))
        #expect(throws: ReachabilityError.invalidTarget("")) { try ReachabilityTarget(parsing: "") }
        #expect(try ReachabilityTarget(parsing: "EXAMPLE.COM.") == .host("EXAMPLE.COM"))
        // What the system resolver would read as an IPv4 address in `inet_aton`'s shorthand, or
        // send to the name servers with an all-numeric top-level label, is refused.
        for numeric in ["127.1", "010.0.0.1", "999.1.1.1", "0x7f.1", "0X7F", "123", "a.123", "1.2.3.4.5"] {
            #expect(throws: ReachabilityError.invalidTarget(numeric)) { try ReachabilityTarget(parsing: numeric) }
        }
        #expect(try ReachabilityTarget(parsing: "1e100.net") == .host("1e100.net"))
        #expect(try ReachabilityTarget(parsing: "a.0x1f") == .host("a.0x1f"))
        // A scope may be an alternative name, up to 127 bytes; 128 is more than the kernel allows.
        let longest = String(repeating: "e", count: 127)
        #expect(try ReachabilityTarget(parsing: "fe80::1%" + longest) == .scopedAddress(IPAddress("fe80::1")!, interface: longest))
        // Any IPv6 literal takes a scope, as getaddrinfo reads one; an IPv4 literal does not.
        #expect(try ReachabilityTarget(parsing: "2001:db8::1%eth0") == .scopedAddress(IPAddress("2001:db8::1")!, interface: "eth0"))
        #expect(try ReachabilityTarget(parsing: "ff02::1%2") == .scopedAddress(IPAddress("ff02::1")!, interface: "2"))
        #expect(throws: ReachabilityError.invalidTarget("10.0.0.1%eth0")) { try ReachabilityTarget(parsing: "10.0.0.1%eth0") }
        #expect(throws: ReachabilityError.invalidTarget("fe80::1%" + longest + "e")) { try ReachabilityTarget(parsing: "fe80::1%" + longest + "e") }
    }

    @Test func randomASCIIIsParsedOrRefused() async {
        await propertyCheck(count: 300, input: Strings.ascii) { Self.check($0) }
    }

    @Test func randomUnicodeIsParsedOrRefused() async {
        await propertyCheck(count: 200, input: Strings.unicode) { Self.check($0) }
    }

    @Test func hostNameAlphabetIsParsedOrRefused() async {
        await propertyCheck(count: 300, input: Strings.from("ab09-_.", length: 0...20)) { Self.check($0) }
        await propertyCheck(count: 200, input: Strings.from("ab09.:", length: 0...20)) { Self.check($0) }
    }

    /// Names near the length limits: labels of 55 to 70 bytes, names of 240 to 260 bytes, each
    /// sometimes with one character made bad (space, control, DEL, non-ASCII, NUL).
    @Test func namesNearTheLimitsAreParsedOrRefused() async {
        let labels = zip(Gen.int(in: 55...70), Gen.int(in: 1...5), Gen.bool).map { length, count, dot in
            Array(repeating: String(repeating: "l", count: length), count: count).joined(separator: ".") + (dot ? "." : "")
        }
        let names = zip(Gen.int(in: 240...260), Gen.bool).map { length, dot in
            String(String(repeating: "abcdefg.", count: 40).prefix(length - 1)) + "z" + (dot ? "." : "")
        }
        let edit = zip(Gen.int(in: 0...3), Gen.int(in: 0...300),
                       Gen<Character?>.element(of: Array(" \t\u{0}\u{7f}é-_.a")).map { $0! })
        await propertyCheck(count: 150, input: labels, edit) { text, edit in
            Self.check(text)
            if edit.0 < 3 { Self.check(mutate(text, edit: edit.0, position: edit.1, with: edit.2)) }
        }
        await propertyCheck(count: 150, input: names, edit) { text, edit in
            Self.check(text)
            if edit.0 < 3 { Self.check(mutate(text, edit: edit.0, position: edit.1, with: edit.2)) }
        }
    }

    @Test func veryLongTextIsRefused() async {
        await propertyCheck(count: 40, input: Strings.long("a.-\u{301}é ")) { text in
            Self.check(text)
            #expect(throws: ReachabilityError.self) { try ReachabilityTarget(parsing: text) }
        }
    }
}
