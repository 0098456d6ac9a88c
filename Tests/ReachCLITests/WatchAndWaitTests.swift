import Foundation
import NetnsTestSupport
import Testing

@Suite("reach watch and reach wait", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct WatchAndWaitTests {
    private func objects(_ process: ReachProcess) -> [[String: Any]] {
        process.lines.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    @Test func watchPrintsTheStateAtOnceThenOneLinePerRealChange() throws {
        let ns = try TestNamespace("cliwatch")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va", "link add vx type veth peer name vy", "link set vx up", "link set vy up"])
        let watch = try ReachProcess(["watch", "10.1.0.9", "10.2.0.9", "--json", "--netns", ns.name])
        defer { watch.stop() }
        #expect(eventually { objects(watch).count == 2 })
        let first = objects(watch)
        #expect(Set(first.compactMap { $0["target"] as? String }) == ["10.1.0.9", "10.2.0.9"])
        #expect(first.allSatisfy { $0["time"] is String && $0["flags"] is [String] && $0["rawFlags"] is Int })
        #expect(first.first { $0["target"] as? String == "10.2.0.9" }?["reachable"] as? Bool == false)

        // 10.2.0.9 becomes reachable through vx: one line; unrelated changes: none.
        try ns.ip("address", "add", "10.2.0.1/24", "dev", "vx")
        #expect(eventually { objects(watch).count == 3 })
        try ns.batch(["address add 10.3.0.1/24 dev vx", "route add 10.4.0.0/16 dev vx"])
        // Carrier loss on va: one line for 10.1.0.9.
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { objects(watch).count == 4 })
        usleep(300_000)
        let all = objects(watch)
        #expect(all.count == 4)
        #expect(all[2]["target"] as? String == "10.2.0.9" && all[2]["reachable"] as? Bool == true)
        #expect(all[3]["target"] as? String == "10.1.0.9" && all[3]["reachable"] as? Bool == false)

        // The namespace goes away: a last line per target says so, and reach exits with 2.
        ns.delete()
        #expect(watch.exitStatus() == 2, "a deleted namespace ends `reach watch` with status 2")
        let last = objects(watch).suffix(2)
        #expect(last.count == 2 && last.allSatisfy { ($0["reason"] as? String)?.hasPrefix("monitoring ended") == true
            && $0["reachable"] as? Bool == false })
    }

    /// WireGuard's `wg-quick` rules send the internet through the tunnel's table; `reach check`
    /// and `reach watch` follow them, and follow them away ("wg0" is a veth here: the test
    /// machine has no WireGuard module, and the rules are what matters).
    @Test func theInternetFollowsPolicyRulesToATunnelsTable() throws {
        let ns = try TestNamespace("cliwg")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinks + [
            "link set wa name wg0", "route add default via 10.1.0.2 dev va",
            "route add default dev wg0 table 51820",
            "rule add not fwmark 0xca6c table 51820", "rule add table main suppress_prefixlength 0",
        ])
        let answer = try reach("check", "--json", "--netns", ns.name)
        #expect(answer.status == 0, "\(answer.output)")
        #expect(answer.output.contains("\"name\":\"wg0\""), "\(answer.output)")
        let watch = try ReachProcess(["watch", "--json", "--netns", ns.name])
        defer { watch.stop() }
        #expect(eventually { objects(watch).count == 1 })
        #expect((objects(watch).first?["interface"] as? [String: Any])?["name"] as? String == "wg0", "\(objects(watch))")
        // `wg-quick down`: the rules go, and the internet goes through va again.
        try ns.batch(["rule del table main suppress_prefixlength 0", "rule del not fwmark 0xca6c table 51820"])
        #expect(eventually { (objects(watch).last?["interface"] as? [String: Any])?["name"] as? String == "va" },
                "\(objects(watch))")
        let after = try reach("check", "--json", "--netns", ns.name)
        #expect(after.output.contains("\"name\":\"va\""), "\(after.output)")
    }

    /// A rule with `suppress_ifgroup` passes over the main table's answer while its link is in
    /// the group: `reach check` and `reach watch` follow the link's group (a link event), as
    /// `ip route get` does, in either family (IPv6's rule checks the link of the hop the flow
    /// was hashed to; here there is one).
    @Test(arguments: [false, true])
    func theInternetFollowsALinksInterfaceGroupUnderSuppressIfgroup(ipv6: Bool) throws {
        let ns = try TestNamespace(ipv6 ? "cligroup6" : "cligroup")
        defer { ns.delete() }
        try ns.batch(ipv6 ? TestNamespace.twoUplinkLinks + [
            "address add 2001:db8:1::1/64 dev va nodad", "address add 2001:db8:2::1/64 dev wa nodad",
            "route add ::/0 via 2001:db8:1::2 dev va", "route add ::/0 via 2001:db8:2::2 dev wa table 100",
        ] : TestNamespace.twoUplinks + [
            "route add default via 10.1.0.2 dev va", "route add default via 10.2.0.2 dev wa table 100",
        ])
        let option = ipv6 ? "-6" : "-4"
        try ns.exec(["ip", option, "rule", "add", "table", "main", "suppress_ifgroup", "5", "pref", "100"])
        try ns.exec(["ip", option, "rule", "add", "table", "100", "pref", "200"])
        let watch = try ReachProcess(["watch", "--json", "--netns", ns.name])
        defer { watch.stop() }
        func watchedLink() -> String? { (objects(watch).last?["interface"] as? [String: Any])?["name"] as? String }
        #expect(eventually { watchedLink() == "va" }, "\(objects(watch))")
        try ns.ip("link", "set", "va", "group", "5")
        #expect(eventually { watchedLink() == "wa" }, "\(objects(watch))")
        let check = try reach("check", "--json", "--netns", ns.name)
        #expect(check.output.contains("\"name\":\"wa\""), "\(check.output)")
        let kernel = try ns.exec(["ip", "route", "get", ipv6 ? "2001:db8:ffff::1" : "192.0.2.1"]).output
        #expect(kernel.contains("dev wa"), "the kernel agrees: \(kernel)")
        try ns.ip("link", "set", "va", "group", "default")
        #expect(eventually { watchedLink() == "va" }, "\(objects(watch))")
    }

    /// A rule that selects by source: the internet waits for the address it selects, which
    /// an internet-only watch must follow (an address event).
    @Test func theInternetFollowsTheAddressARuleSelectsBySource() throws {
        let ns = try TestNamespace("clisrc")
        defer { ns.delete() }
        try ns.batch(TestNamespace.twoUplinkLinks + [
            "address add 2001:db8:1::1/64 dev wa nodad", "route add ::/0 via 2001:db8:1::2 dev wa table 100",
        ])
        try ns.ip("-6", "rule", "add", "from", "2001:db8:2::/64", "lookup", "100", "pref", "100")
        let watch = try ReachProcess(["watch", "--json", "--netns", ns.name])
        defer { watch.stop() }
        #expect(eventually { objects(watch).count == 1 })
        #expect(objects(watch).first?["reachable"] as? Bool == false, "\(objects(watch))")
        try ns.ip("-6", "address", "add", "2001:db8:2::1/64", "dev", "va", "nodad")
        #expect(eventually { objects(watch).last?["reachable"] as? Bool == true }, "\(objects(watch))")
        #expect((objects(watch).last?["interface"] as? [String: Any])?["name"] as? String == "wa", "\(objects(watch))")
    }

    /// The human lines, byte for byte: the timestamp, then every field in its place (a direct
    /// route, a gateway, no route, a carrier loss, IPv4 and IPv6).
    @Test func watchHumanLinesCarryEveryFieldByteForByte() throws {
        let ns = try TestNamespace("cliwatchh")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.1.0.1/24 dev va", "route add default via 10.1.0.2 dev va",
                      "address add 2001:db8:1::1/64 dev va nodad"])
        let watch = try ReachProcess(["watch", "10.1.0.9", "198.18.0.1", "2001:db8:9::1", "2001:db8:1::5", "--netns", ns.name])
        defer { watch.stop() }
        #expect(eventually { watch.lines.withLock { $0.count } == 4 })
        try ns.ip("link", "set", "vb", "down")
        #expect(eventually { watch.lines.withLock { $0.count } == 7 })
        let lines = watch.lines.withLock { $0 }
        let stamp = #/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z  /#
        #expect(lines.allSatisfy { $0.prefixMatch(of: stamp) != nil }, "\(lines)")
        let bodies = lines.map { String($0.dropFirst(29)) }
        #expect(Set(bodies.prefix(4)) == [
            "10.1.0.9: reachable  reachableViaOther  -R ------d  dev va (other)",
            "198.18.0.1: reachable  reachableViaOther  -R -------  dev va (other)  via 10.1.0.2",
            "2001:db8:9::1: not reachable  notReachable  -- -------  (no route)",
            "2001:db8:1::5: reachable  reachableViaOther  -R ------d  dev va (other)",
        ])
        #expect(Set(bodies.dropFirst(4)) == [
            "10.1.0.9: not reachable  notReachable  -- -------  dev va (other)  (no carrier)",
            "198.18.0.1: not reachable  notReachable  -- -------  dev va (other)  via 10.1.0.2  (no carrier)",
            "2001:db8:1::5: not reachable  notReachable  -- -------  dev va (other)  (no carrier)",
        ])
    }

    @Test func waitReturnsWhenReachableOrTimesOut() throws {
        let ns = try TestNamespace("cliwait")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "address add 10.1.0.1/24 dev va"])
        let timedOut = try reach("wait", "10.1.0.9", "--timeout", "0.5", "--netns", ns.name)
        #expect(timedOut.status == 1)

        let waiting = Process()
        waiting.executableURL = URL(fileURLWithPath: reachBinary)
        waiting.arguments = ["wait", "10.1.0.9", "--timeout", "30", "--netns", ns.name]
        try waiting.run()
        usleep(300_000)
        #expect(waiting.isRunning)
        try ns.ip("link", "set", "vb", "up")
        waiting.waitUntilExit()
        #expect(waiting.terminationStatus == 0)

        // A namespace deleted during the wait ends it with status 2, not at the timeout.
        try ns.ip("link", "set", "vb", "down")
        let abandoned = try ReachProcess(["wait", "10.1.0.9", "--timeout", "60", "--netns", ns.name])
        usleep(300_000)
        ns.delete()
        #expect(abandoned.exitStatus() == 2)

        #expect(try reach("wait", "--timeout", "-1", "--netns", ns.name).status == 2)
        #expect(try reach("wait", "not a host", "--netns", ns.name).status == 2)
    }
}
