import PropertyBased
import LinuxReachability
import Testing

/// `ConstrainedLinkPolicy(parsing:)`, the parser of `REACH_CONSTRAINED_LINKS` and its file.
///
/// Property: for any text (rule-like tokens, separators, comments, NUL, control characters,
/// non-ASCII, over-long patterns) the parser never crashes and either returns rules or throws
/// its typed `ParseError` naming the offending entry; written back (each rule's description, one
/// per line) the rules parse to the same policy; a `type:` or `kind:` entry is a type or kind
/// rule or an error, never a name pattern; a name pattern is never empty, over 255 bytes or
/// holding NUL.
@Suite("Bad input: constrained-link rules")
struct ConstrainedLinkRuleTests {
    static func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = text.count > 60 ? "\(text.prefix(60).debugDescription)… (\(text.utf8.count) bytes)" : text.debugDescription
        do {
            let policy = try ConstrainedLinkPolicy(parsing: text, source: "fuzz")
            let written = policy.rules.map(\.description).joined(separator: "\n")
            #expect((try? ConstrainedLinkPolicy(parsing: written)) == policy, "\(shown)", sourceLocation: sourceLocation)
            for rule in policy.rules {
                if case .name(let pattern) = rule {
                    // fnmatch(3) would see only the part before a NUL.
                    #expect(!pattern.isEmpty && !pattern.hasPrefix("type:") && !pattern.hasPrefix("kind:")
                                && pattern.utf8.count <= 255 && !pattern.utf8.contains(0), "\(shown) gave the pattern \(pattern.debugDescription)",
                            sourceLocation: sourceLocation)
                }
            }
        } catch {
            // `error` is a ParseError: the initializer's typed throws say so.
            #expect(!error.entry.isEmpty && text.contains(error.entry) && error.description.hasPrefix("fuzz: "),
                    "\(shown) threw \(error)", sourceLocation: sourceLocation)
        }
    }

    static let corpus = [
        "", "#", "wwan*", "wwan*,type:cellular", "type:", "kind:", "type:cellular#x", "type:fast", "kind:nope",
        "type:cellular\u{0}", "a\u{0}b", "\u{1b}[31m", "type:wifi\r\nkind:wwan", "a\u{85}b\u{2028}c", "[", "[!]", "*",
        String(repeating: "x", count: 255), String(repeating: "x", count: 256), String(repeating: "é", count: 128),
        String(repeating: "a,", count: 10_000), String(repeating: "#", count: 10_000), "type:cellular" + String(repeating: "\u{301}", count: 100),
    ]

    @Test func corpusParsesOrThrowsTheTypedError() {
        for text in Self.corpus { Self.check(text) }
        #expect(throws: ConstrainedLinkPolicy.ParseError.self) { try ConstrainedLinkPolicy(parsing: "type:fast") }
        #expect(throws: ConstrainedLinkPolicy.ParseError.self) {
            try ConstrainedLinkPolicy(parsing: String(repeating: "x", count: 256))
        }
        // Regression: "wwan\0x" was the pattern "wwan" for fnmatch(3).
        #expect(throws: ConstrainedLinkPolicy.ParseError.self) { try ConstrainedLinkPolicy(parsing: "wwan\u{0}x") }
    }

    @Test func randomRulesParseOrThrowTheTypedError() async {
        let token = Gen<String?>.element(of: ["type:", "kind:", "cellular", "wifi", "wwan", "bluetooth", "veth", "*", "?",
                                              "[a-z]", ",", " ", "\t", "\n", "\r\n", "#", ":", "\u{0}", "\u{1b}", "é", "\u{85}",
                                              "\u{a0}", "x", "0"]).map { $0! }
        await propertyCheck(count: 300, input: token.array(of: 0...12).map { $0.joined() }) { Self.check($0) }
        await propertyCheck(count: 200, input: Strings.ascii) { Self.check($0) }
        await propertyCheck(count: 200, input: Strings.unicode) { Self.check($0) }
        await propertyCheck(count: 30, input: Strings.long("x*,# é")) { Self.check($0) }
    }
}
