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
