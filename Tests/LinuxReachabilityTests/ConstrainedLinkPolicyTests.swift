import Foundation
import Testing
import LinuxReachability

@Suite("Constrained-link policy")
struct ConstrainedLinkPolicyTests {
    @Test func parsesPatternsTypesAndKinds() throws {
        let policy = try ConstrainedLinkPolicy(parsing: """
            # metered links
            wwan*, usb0   type:cellular
            kind:bluetooth # PAN
            """)
        #expect(policy.rules == [.name("wwan*"), .name("usb0"), .type(.cellular), .kind(.bluetooth)])
        #expect(policy.rules.map(\.description) == ["wwan*", "usb0", "type:cellular", "kind:bluetooth"])
        #expect(policy.isConstrained(name: "wwan1", type: .other, kind: .other))
        #expect(policy.isConstrained(name: "usb0", type: .wiredEthernet, kind: .ethernet))
        #expect(!policy.isConstrained(name: "usb1", type: .wiredEthernet, kind: .ethernet))
        #expect(policy.isConstrained(name: "x", type: .cellular, kind: .wwan))
        #expect(policy.isConstrained(name: "bnep0", type: .other, kind: .bluetooth))
        #expect(try ConstrainedLinkPolicy(parsing: " \n# nothing\n").rules.isEmpty)
        #expect(!ConstrainedLinkPolicy.none.isConstrained(name: "wwan0", type: .cellular, kind: .wwan))
        // A name pattern matches any of a link's names, as systemd-networkd's `Name=` does.
        #expect(policy.isConstrained(name: "eth1", alternativeNames: ["enp0s20f0u1", "wwan7"], type: .other, kind: .other))
        #expect(!policy.isConstrained(name: "eth1", alternativeNames: ["enp0s20f0u1"], type: .other, kind: .other))
    }

    @Test func rejectsUnknownTypesAndKindsWithTheEntry() {
        #expect(throws: ConstrainedLinkPolicy.ParseError.self) { try ConstrainedLinkPolicy(parsing: "type:fast") }
        do {
            _ = try ConstrainedLinkPolicy(parsing: "wwan0 kind:modem", source: "test")
            Issue.record("no error")
        } catch {
            #expect(error.entry == "kind:modem")
            #expect(error.description.hasPrefix("test: unknown kind \"modem\""))
        }
        #expect(throws: ConstrainedLinkPolicy.ParseError.self) {
            try ConstrainedLinkPolicy(parsing: String(repeating: "w", count: 300))
        }
    }

    @Test func systemPolicyComesFromTheEnvironmentOrAFile() throws {
        let fromVariable = try ConstrainedLinkPolicy.system(environment: ["REACH_CONSTRAINED_LINKS": "type:cellular"])
        #expect(fromVariable.rules == [.type(.cellular)])

        let path = NSTemporaryDirectory() + "constrained-\(getpid())"
        try "usb*\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fromFile = try ConstrainedLinkPolicy.system(environment: ["REACH_CONSTRAINED_LINKS_FILE": path])
        #expect(fromFile.rules == [.name("usb*")])
        // The variable wins over the file.
        let both = try ConstrainedLinkPolicy.system(environment: ["REACH_CONSTRAINED_LINKS": "", "REACH_CONSTRAINED_LINKS_FILE": path])
        #expect(both.rules.isEmpty)
        // A named file that is missing is an error; the default file may be missing.
        #expect(throws: ConstrainedLinkPolicy.ParseError.self) {
            try ConstrainedLinkPolicy.system(environment: ["REACH_CONSTRAINED_LINKS_FILE": path + ".missing"])
        }
    }
}
