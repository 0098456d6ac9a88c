import Glibc
import Netlink
import PropertyBased
import Testing

/// The namespace parsers: `NetworkNamespace.named(_:)`, `.path(_:)` and `.parse(_:)` (the
/// `--netns` form: a value with `/` is a path, anything else a name).
///
/// Property: for any string they never crash and either return the namespace the documentation
/// promises (`/run/netns/NAME` for a name, the path as given) or throw
/// `NetlinkError.invalidNamespaceName`, exactly when the oracle says the text is bad: a name
/// that is empty, over 255 bytes, `.`, `..`, or has `/` or NUL in it; a path that is empty, at
/// least `PATH_MAX` bytes, or has NUL in it. The error's description is one line without control
/// characters. These are pure parsers: no namespace is opened, created or entered here.
@Suite("Bad input: namespace names and paths")
struct NamespaceNameTests {
    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return !bytes.isEmpty && bytes.count <= 255 && name != "." && name != ".."
            && !bytes.contains(UInt8(ascii: "/")) && !bytes.contains(0)
    }

    static func isValidPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        return !bytes.isEmpty && bytes.count < Int(PATH_MAX) && !bytes.contains(0)
    }

    /// Runs one parser and checks it against the oracle's verdict and the expected value.
    static func check(_ label: String, _ text: String, valid: Bool, path: String, name: String?,
                      _ parse: (String) throws(NetlinkError) -> NetworkNamespace,
                      sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = text.count > 60 ? "\(text.prefix(60).debugDescription)… (\(text.utf8.count) bytes)" : text.debugDescription
        do {
            let namespace = try parse(text)
            #expect(valid, "\(label)(\(shown)) was accepted", sourceLocation: sourceLocation)
            #expect(namespace.path == path && namespace.name == name && !namespace.isCurrent,
                    "\(label)(\(shown)) gave \(namespace.path ?? "nil")", sourceLocation: sourceLocation)
        } catch {
            #expect(!valid, "\(label)(\(shown)) threw \(error)", sourceLocation: sourceLocation)
            #expect(error == .invalidNamespaceName, "\(label)(\(shown)) threw \(error)", sourceLocation: sourceLocation)
            #expect(isOneClearLine(error.description), "\(label)(\(shown)): \(error.description.debugDescription)",
                    sourceLocation: sourceLocation)
            #expect(error.description.utf8.count < 400, "\(label)(\(shown)): description of \(error.description.utf8.count) bytes",
                    sourceLocation: sourceLocation)
        }
    }

    /// Checks the three parsers on `text`.
    static func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let asName = isValidName(text), asPath = isValidPath(text)
        check("named", text, valid: asName, path: "/run/netns/" + text, name: text, NetworkNamespace.named,
              sourceLocation: sourceLocation)
        check("path", text, valid: asPath, path: text, name: nil, NetworkNamespace.path, sourceLocation: sourceLocation)
        let isPath = text.utf8.contains(UInt8(ascii: "/"))
        check("parse", text, valid: isPath ? asPath : asName, path: isPath ? text : "/run/netns/" + text,
              name: isPath ? nil : text, NetworkNamespace.parse, sourceLocation: sourceLocation)
    }

    static let corpus: [String] = [
        "", ".", "..", "...", "/", "//", "./", "../", "a/..", "../../etc/passwd", "blue", "blue/", "/run/netns/blue",
        "a\u{0}b", "\u{0}", "/proc/1/ns/net\u{0}x", " ", "\t", "a b", "a\nb", "a\r", "\u{1b}[31m", "\u{7f}",
        "\u{85}", "a\u{2028}b", "ü", "名前", "e\u{301}", "-", "--netns", String(repeating: "x", count: 255),
        String(repeating: "x", count: 256), String(repeating: "é", count: 127) + "x", String(repeating: "é", count: 128),
        "/" + String(repeating: "x", count: Int(PATH_MAX) - 2), "/" + String(repeating: "x", count: Int(PATH_MAX) - 1),
        String(repeating: "../", count: 2_000), "a" + String(repeating: "\u{301}", count: 5_000),
    ]

    @Test func corpusAgreesWithTheOracle() {
        for text in Self.corpus { Self.check(text) }
        #expect(!Self.isValidName("..") && !Self.isValidName(String(repeating: "x", count: 256)) && Self.isValidName("..."))
        #expect(!Self.isValidPath("/" + String(repeating: "x", count: Int(PATH_MAX) - 1)))
        #expect(throws: NetlinkError.invalidNamespaceName) { try NetworkNamespace.parse("a\u{0}b") }
    }

    @Test func randomASCIIIsParsedOrRefused() async {
        await propertyCheck(count: 300, input: Strings.ascii) { Self.check($0) }
    }

    @Test func randomUnicodeIsParsedOrRefused() async {
        await propertyCheck(count: 200, input: Strings.unicode) { Self.check($0) }
    }

    @Test func pathAlphabetIsParsedOrRefused() async {
        await propertyCheck(count: 300, input: Strings.from("./a\u{0} ", length: 0...12)) { Self.check($0) }
    }

    /// Names and paths around the limits: 250 to 260 bytes, and `PATH_MAX` give or take a few.
    @Test func textNearTheLimitsIsParsedOrRefused() async {
        let lengths = Gen.int(in: 0...3).map { [250, 256, Int(PATH_MAX) - 6, Int(PATH_MAX)][$0] }
        await propertyCheck(count: 100, input: lengths, Gen.int(in: 0...10), Strings.from("x/é.\u{0}", length: 0...2)) {
            base, extra, tail in
            Self.check(String(repeating: "n", count: base + extra) + tail)
            Self.check("/" + String(repeating: "p", count: base + extra) + tail)
        }
    }

    @Test func veryLongTextIsParsedOrRefused() async {
        await propertyCheck(count: 40, input: Strings.long("x/.é")) { Self.check($0) }
    }
}
