import Foundation
import Netlink
import LinuxReachability

/// One fixture of the corpus under `Tests/Fixtures/sysfs/`: a sysfs tree modelled on a real driver
/// (`sys/`) and the rtnetlink facts and expected answers of its links (`links.facts`).
struct Fixture: CustomStringConvertible, Sendable {
    /// One `[NAME]` section of `links.facts`.
    struct LinkEntry: Sendable {
        var facts: LinkFacts
        var expected: Expected
    }

    struct Expected: Sendable, Equatable {
        var type: InterfaceType
        var kind: LinkKind
        var isExpensive: Bool
        var isTransient: Bool
        var isVirtual: Bool

        init(type: InterfaceType, kind: LinkKind, isExpensive: Bool, isTransient: Bool, isVirtual: Bool) {
            (self.type, self.kind, self.isExpensive, self.isTransient, self.isVirtual) = (type, kind, isExpensive, isTransient, isVirtual)
        }

        init(_ classification: LinkClassification) {
            self.init(type: classification.type, kind: classification.kind, isExpensive: classification.isExpensive,
                      isTransient: classification.isTransient, isVirtual: classification.isVirtual)
        }
    }

    struct FormatError: Error, CustomStringConvertible {
        var description: String
    }

    var name: String
    var directory: URL
    /// The first comment block: the driver and hardware the fixture is modelled on.
    var source: String
    var links: [LinkEntry]

    var sysfsRoot: String { directory.appendingPathComponent("sys").path }
    var description: String { name }

    /// Every fixture directory, sorted by name.
    static let corpusDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/sysfs")

    static func all() throws -> [Fixture] {
        let names = try FileManager.default.contentsOfDirectory(atPath: corpusDirectory.path).sorted()
        return try names.filter { !$0.hasPrefix(".") && !$0.hasSuffix(".md") }.map { try Fixture(named: $0) }
    }

    init(named name: String) throws {
        self.name = name
        directory = Self.corpusDirectory.appendingPathComponent(name)
        let text = try String(contentsOf: directory.appendingPathComponent("links.facts"), encoding: .utf8)
        var comments: [String] = []
        var sections: [(String, [String: String])] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") {
                if sections.isEmpty { comments.append(String(line.dropFirst()).trimmingCharacters(in: .whitespaces)) }
            } else if line.hasPrefix("[") && line.hasSuffix("]") {
                sections.append((String(line.dropFirst().dropLast()), [:]))
            } else if let equals = line.firstIndex(of: "=") {
                guard !sections.isEmpty else { throw FormatError(description: "\(name): key before any [link] section") }
                let key = line[..<equals].trimmingCharacters(in: .whitespaces)
                sections[sections.count - 1].1[key] = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            } else if !line.isEmpty {
                throw FormatError(description: "\(name): cannot read line \"\(line)\"")
            }
        }
        source = comments.joined(separator: " ")
        links = try sections.map { linkName, values in try Self.entry(linkName, values, fixture: name) }
    }

    private static func entry(_ linkName: String, _ values: [String: String], fixture: String) throws -> LinkEntry {
        func required(_ key: String) throws -> String {
            guard let value = values[key], !value.isEmpty else {
                throw FormatError(description: "\(fixture) [\(linkName)]: missing \(key)")
            }
            return value
        }
        func bool(_ key: String) throws -> Bool {
            switch try required(key) {
            case "true": return true
            case "false": return false
            case let other: throw FormatError(description: "\(fixture) [\(linkName)]: \(key) = \(other) is not true/false")
            }
        }
        func int(_ key: String) throws -> Int32? {
            guard let text = values[key], !text.isEmpty else { return nil }
            guard let value = Int32(text) else { throw FormatError(description: "\(fixture) [\(linkName)]: \(key) = \(text)") }
            return value
        }
        let flagNames = (values["flags"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        var flags: InterfaceFlags = []
        for flagName in flagNames where !flagName.isEmpty {
            guard let flag = (0..<32).map({ InterfaceFlags(rawValue: 1 << $0) }).first(where: { $0.names == [flagName] }) else {
                throw FormatError(description: "\(fixture) [\(linkName)]: unknown flag \(flagName)")
            }
            flags.insert(flag)
        }
        guard let index = try int("index"), let arphrd = UInt16(try required("arphrd")) else {
            throw FormatError(description: "\(fixture) [\(linkName)]: bad index or arphrd")
        }
        let typeName = try required("expect.type")
        guard let type = InterfaceType.allCases.first(where: { $0.description == typeName }),
              let kind = LinkKind(rawValue: try required("expect.kind")) else {
            throw FormatError(description: "\(fixture) [\(linkName)]: unknown expect.type or expect.kind")
        }
        let facts = LinkFacts(index: index, name: linkName, arphrdType: ARPHRDType(rawValue: arphrd),
                              kind: values["kind"].flatMap { $0.isEmpty ? nil : $0 }, flags: flags,
                              masterIndex: try int("master"), lowerLinkIndex: try int("link"))
        return LinkEntry(facts: facts, expected: Expected(
            type: type, kind: kind, isExpensive: try bool("expect.expensive"),
            isTransient: try bool("expect.transient"), isVirtual: try bool("expect.virtual")))
    }

    /// The link as rtnetlink would report it (for the classifier cache, which takes `Link`s).
    func link(_ entry: LinkEntry) -> Link {
        Link(index: entry.facts.index, name: entry.facts.name, arphrdType: entry.facts.arphrdType,
             kind: entry.facts.kind, flags: entry.facts.flags, operState: .up, mtu: 1500, masterIndex: entry.facts.masterIndex,
             lowerLinkIndex: entry.facts.lowerLinkIndex)
    }
}
