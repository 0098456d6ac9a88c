import Foundation
import Testing
import Netlink
import LinuxReachability

/// The fixture corpus: real drivers' sysfs trees, read by the sysfs reader and classified.
@Suite("Fixture corpus")
struct FixtureCorpusTests {
    static let fixtures: [Fixture] = (try? Fixture.all()) ?? []

    @Test func corpusIsCompleteAndReadable() throws {
        let fixtures = try Fixture.all()
        #expect(fixtures.count >= 31)
        for fixture in fixtures {
            #expect(!fixture.links.isEmpty, "\(fixture.name) has no links")
            #expect(fixture.source.count > 20, "\(fixture.name) does not name its source driver")
        }
    }

    /// The sysfs reader on the fixture tree, then the pure classifier over the fixture's links.
    @Test(arguments: fixtures)
    func sysfsReaderAndPureClassifier(_ fixture: Fixture) {
        let reader = SysfsReader(root: fixture.sysfsRoot)
        let facts = fixture.links.map { entry in
            var facts = entry.facts
            facts.sysfs = reader.facts(forLinkNamed: facts.name)
            return facts
        }
        for facts in facts where facts.sysfs.isPresent {
            #expect(facts.sysfs.interfaceIndex == facts.index, "\(fixture.name) \(facts.name): uevent IFINDEX")
        }
        let answers = LinkClassifier.classify(facts)
        for entry in fixture.links {
            let answer = answers[entry.facts.index]
            #expect(answer.map(Fixture.Expected.init) == entry.expected,
                    "\(fixture.name) \(entry.facts.name): \(answer.map(String.init(describing:)) ?? "nil")")
        }
    }

    /// The same answers through the classification cache reading the tree as `--sysfs-root`.
    @Test(arguments: fixtures)
    func classificationCacheOnTheTree(_ fixture: Fixture) {
        let cache = LinkClassificationCache(source: .tree(root: fixture.sysfsRoot))
        let answers = cache.classifications(of: fixture.links.map(fixture.link))
        for entry in fixture.links {
            #expect(answers[entry.facts.index].map(Fixture.Expected.init) == entry.expected,
                    "\(fixture.name) \(entry.facts.name)")
        }
    }

    /// Without sysfs, a physical link loses its evidence but never becomes something it is
    /// not: the classifier falls back to its kind, link type or name.
    @Test(arguments: fixtures)
    func withoutSysfsTheAnswerOnlyWeakens(_ fixture: Fixture) {
        let answers = LinkClassifier.classify(fixture.links.map(\.facts))
        for entry in fixture.links {
            guard let answer = answers[entry.facts.index] else { Issue.record("no answer"); continue }
            #expect(answer.type == entry.expected.type || answer.type == .other,
                    "\(fixture.name) \(entry.facts.name): \(answer)")
        }
    }
}
