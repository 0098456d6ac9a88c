import Glibc

/// Which links count as constrained: user policy, since Linux has no Low Data Mode.
///
/// NWPath's `isConstrained` reflects a user's Low Data Mode. Linux has nothing like it, so this
/// library never guesses: a link is constrained when a rule here matches it, or when it is
/// stacked on such a link and takes its type from it (a VLAN or macvlan on it, a bridge or bond
/// whose ports agree on their type, as ``LinkClassifier`` resolves them), since its traffic
/// leaves through that link, as ``LinkClassification/isExpensive`` is inherited. Rules are written
/// as text, one per entry, separated by commas, whitespace or new lines, with `#` comments:
///
/// - `NAME-PATTERN`: a shell pattern on the link's name or any of its alternative names
///   (`wwan*`, `usb0`, `wlx00c0ca*`), as systemd-networkd's `Name=` matches: udev's longer
///   predictable names (`enx00e04c680001`, `wlp0s20f0u2`) are often alternative names only;
/// - `type:TYPE`: every link of an ``InterfaceType`` (`type:cellular`);
/// - `kind:KIND`: every link of a ``LinkKind`` (`kind:bluetooth`).
///
/// ``system(environment:)`` reads the rules from the environment variable
/// `REACH_CONSTRAINED_LINKS`, or else from the file named by `REACH_CONSTRAINED_LINKS_FILE`,
/// or else from `/etc/reach/constrained-links` if it exists.
package struct ConstrainedLinkPolicy: Sendable, Hashable {
    /// One rule.
    package enum Rule: Sendable, Hashable, CustomStringConvertible {
        /// Links whose name, or one of whose alternative names, matches a shell pattern
        /// (`fnmatch(3)`).
        case name(String)
        /// Links of this type.
        case type(InterfaceType)
        /// Links of this kind.
        case kind(LinkKind)

        /// The rule as it is written: `wwan*`, `type:cellular`, `kind:bluetooth`.
        package var description: String {
            switch self {
            case .name(let pattern): return pattern
            case .type(let type): return "type:\(type)"
            case .kind(let kind): return "kind:\(kind)"
            }
        }
    }

    /// A rule that could not be read.
    package struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The offending entry.
        package var entry: String
        /// Where the rules came from (`REACH_CONSTRAINED_LINKS`, a file path).
        package var source: String
        /// Such as `REACH_CONSTRAINED_LINKS: unknown type "fast" in "type:fast"`.
        package var description: String
    }

    /// The rules; a link is constrained when any matches.
    package var rules: [Rule]

    /// A policy with these rules.
    package init(rules: [Rule] = []) {
        self.rules = rules
    }

    /// No link is constrained.
    package static let none = ConstrainedLinkPolicy()

    /// This process's values of ``environmentVariable`` and ``fileEnvironmentVariable``.
    package static var processEnvironment: [String: String] {
        var found: [String: String] = [:]
        for name in [environmentVariable, fileEnvironmentVariable] {
            if let value = getenv(name) { found[name] = String(cString: value) }
        }
        return found
    }

    /// The environment variable with the rules.
    package static let environmentVariable = "REACH_CONSTRAINED_LINKS"
    /// The environment variable naming a file with the rules.
    package static let fileEnvironmentVariable = "REACH_CONSTRAINED_LINKS_FILE"
    /// The file read when neither variable is set.
    package static let defaultFile = "/etc/reach/constrained-links"

    /// Reads rules from text (see the type's documentation for the syntax).
    /// - Parameters:
    ///   - text: The rules.
    ///   - source: Names the origin of `text` in errors.
    /// - Throws: ``ParseError`` for an unknown type or kind, or a pattern that is empty after
    ///   its prefix, longer than 255 bytes or holding NUL.
    package init(parsing text: String, source: String = "rules") throws(ParseError) {
        var rules: [Rule] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            for entry in content.split(whereSeparator: { $0 == "," || $0.isWhitespace }) {
                rules.append(try Self.rule(String(entry), source: source))
            }
        }
        self.rules = rules
    }

    /// The policy the environment and configuration give: `REACH_CONSTRAINED_LINKS`, else the
    /// file named by `REACH_CONSTRAINED_LINKS_FILE`, else `/etc/reach/constrained-links` if it
    /// exists, else ``none``.
    /// - Throws: ``ParseError`` for a malformed rule, or a named file that cannot be read.
    package static func system(environment: [String: String] = processEnvironment) throws(ParseError) -> ConstrainedLinkPolicy {
        if let text = environment[environmentVariable] {
            return try ConstrainedLinkPolicy(parsing: text, source: environmentVariable)
        }
        let path = environment[fileEnvironmentVariable] ?? defaultFile
        guard let data = FileContents.bytes(at: path, limit: 1 << 20) else {
            if environment[fileEnvironmentVariable] == nil { return .none }
            throw ParseError(entry: path, source: fileEnvironmentVariable,
                             description: "\(fileEnvironmentVariable): cannot read \(path)")
        }
        return try ConstrainedLinkPolicy(parsing: String(decoding: data, as: UTF8.self), source: path)
    }

    /// Whether a link with this name, these alternative names, this type and this kind is
    /// constrained.
    package func isConstrained(name: String, alternativeNames: [String] = [], type: InterfaceType, kind: LinkKind) -> Bool {
        rules.contains { rule in
            switch rule {
            case .name(let pattern):
                return fnmatch(pattern, name, 0) == 0 || alternativeNames.contains { fnmatch(pattern, $0, 0) == 0 }
            case .type(let ruleType): return ruleType == type
            case .kind(let ruleKind): return ruleKind == kind
            }
        }
    }

    static func rule(_ entry: String, source: String) throws(ParseError) -> Rule {
        func failure(_ why: String) -> ParseError {
            ParseError(entry: entry, source: source, description: "\(source): \(why) in \"\(entry)\"")
        }
        if entry.hasPrefix("type:") {
            let name = entry.dropFirst("type:".count)
            guard let type = InterfaceType.allCases.first(where: { $0.description == name }) else {
                throw failure("unknown type \"\(name)\" (known: \(InterfaceType.allCases.map(\.description).joined(separator: ", ")))")
            }
            return .type(type)
        }
        if entry.hasPrefix("kind:") {
            let name = entry.dropFirst("kind:".count)
            guard let kind = LinkKind(rawValue: String(name)) else {
                throw failure("unknown kind \"\(name)\" (known: \(LinkKind.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            return .kind(kind)
        }
        guard entry.utf8.count <= 255 else { throw failure("a name pattern longer than 255 bytes") }
        // fnmatch(3) would see only the part before a NUL (a rules file may hold one).
        guard !entry.utf8.contains(0) else { throw failure("a NUL byte in a name pattern") }
        return .name(entry)
    }
}
