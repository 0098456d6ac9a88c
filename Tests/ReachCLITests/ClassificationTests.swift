import Foundation
import NetnsTestSupport
import Testing

/// `reach links` classifies real links of a test namespace, with sysfs from fixture trees.
@Suite("reach links classification", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ClassificationTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Fixtures/sysfs").standardized

    /// One sysfs tree holding the trees of several fixtures (their paths do not collide).
    private func mergedTree(_ names: [String]) throws -> String {
        let root = NSTemporaryDirectory() + "reach-sysfs-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for name in names {
            try run(["cp", "-a", Self.fixtures.appendingPathComponent(name).appendingPathComponent("sys").path + "/.", root])
        }
        return root
    }

    @Test func vethsNamedLikeRadiosAreClassifiedFromTheFixtureTree() throws {
        let namespace = try TestNamespace("clitype")
        defer { namespace.delete() }
        let root = try mergedTree(["iwlwifi-ax201", "qmi-wwan-rawip"])
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(FileManager.default.fileExists(atPath: root + "/class/net/wlp0s20f3/uevent"))
        #expect(FileManager.default.fileExists(atPath: root + "/class/net/wwan0/uevent"))
        try namespace.batch(["link add wlp0s20f3 type veth peer name wwan0", "tuntap add dev tun0 mode tun"])

        let result = try reach("links", "--json", "--netns", namespace.name, "--sysfs-root", root)
        #expect(result.status == 0, "\(result.error)")
        let links = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        func link(_ name: String) -> [String: Any] { links.first { $0["name"] as? String == name } ?? [:] }

        #expect(link("wlp0s20f3")["type"] as? String == "wifi")
        #expect(link("wlp0s20f3")["kind"] as? String == "wifi")
        #expect(link("wlp0s20f3")["infoKind"] as? String == "veth")
        #expect(link("wlp0s20f3")["expensive"] as? Bool == false)
        #expect(link("wwan0")["type"] as? String == "cellular")
        #expect(link("wwan0")["kind"] as? String == "wwan")
        #expect(link("wwan0")["expensive"] as? Bool == true)
        #expect(link("lo")["type"] as? String == "loopback")
        #expect(link("tun0")["type"] as? String == "other")
        #expect(link("tun0")["kind"] as? String == "tun")
        #expect(link("tun0")["transient"] as? Bool == true)
        #expect(link("tun0")["virtual"] as? Bool == true)

        // Without the fixture tree the namespace's own sysfs shows two veths: other, virtual.
        let plain = try reach("links", "--json", "--netns", namespace.name)
        let plainLinks = try #require(try JSONSerialization.jsonObject(with: Data(plain.output.utf8)) as? [[String: Any]])
        let veth = try #require(plainLinks.first { $0["name"] as? String == "wlp0s20f3" })
        #expect(veth["type"] as? String == "other")
        #expect(veth["kind"] as? String == "veth")
        #expect(veth["virtual"] as? Bool == true)
    }

    @Test func constrainedLinksComeFromTheEnvironment() throws {
        let namespace = try TestNamespace("cliconstr")
        defer { namespace.delete() }
        try namespace.batch(["link add usb0 type veth peer name eth9", "link add lan0 type veth peer name lan1",
                             "link property add dev lan0 altname enx020000000001"])
        let result = try run(["env", "REACH_CONSTRAINED_LINKS=usb*,enx02*", reachBinary, "links", "--json", "--netns", namespace.name], check: false)
        #expect(result.status == 0, "\(result.error)")
        let links = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
        #expect(links.first { $0["name"] as? String == "usb0" }?["constrained"] as? Bool == true)
        #expect(links.first { $0["name"] as? String == "eth9" }?["constrained"] as? Bool == false)
        #expect(links.first { $0["name"] as? String == "lan0" }?["constrained"] as? Bool == true, "by its alternative name")
        #expect(links.first { $0["name"] as? String == "lan1" }?["constrained"] as? Bool == false)

        let bad = try run(["env", "REACH_CONSTRAINED_LINKS=type:fast", reachBinary, "links", "--netns", namespace.name], check: false)
        #expect(bad.status == 2)
        #expect(bad.error.hasPrefix("reach: REACH_CONSTRAINED_LINKS: unknown type"), "\(bad.error)")
    }
}
