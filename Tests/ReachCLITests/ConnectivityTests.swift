import Foundation
import NetnsTestSupport
import Testing

/// `reach check`, `watch` and `wait` with an HTTP connectivity probe, against the probe server of
/// a ``ProbeNetwork``: every probe stays inside the test's two namespaces.
@Suite("Connectivity probes", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ConnectivityTests {
    private func object(_ result: CommandResult) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any]) ?? [:]
    }

    private func check(_ network: ProbeNetwork, _ extra: String...) throws -> CommandResult {
        try run([reachBinary, "check", "--json", "--netns", network.client.name, "--connectivity"] + extra, check: false)
    }

    @Test func eachServerBehaviourIsADefinedState() throws {
        let network = try ProbeNetwork("cprobe")
        defer { network.stop() }
        let full = try check(network, "--probe-url", network.url())
        #expect(full.status == 0, "\(full.output)")
        #expect(object(full)["connectivity"] as? String == "full")
        #expect(object(full)["reachable"] as? Bool == true)

        try network.setMode("ok")
        let expected = try check(network, "--probe-url", network.url("/check"), "--probe-expect", "OK")
        #expect(object(expected)["connectivity"] as? String == "full" && expected.status == 0, "\(expected.output)")
        let notEmpty = try check(network, "--probe-url", network.url())
        #expect(object(notEmpty)["connectivity"] as? String == "portal" && notEmpty.status == 1, "a 200 where a 204 is expected")

        try network.setMode("redirect http://10.77.0.1/login")
        let portal = try check(network, "--probe-url", network.url())
        #expect(portal.status == 1)
        #expect(object(portal)["connectivity"] as? String == "portal", "\(portal.output)")
        #expect(object(portal)["portalLocation"] as? String == "http://10.77.0.1/login")

        try network.setMode("loop")
        let loop = try check(network, "--probe-url", network.url("/generate_204"))
        #expect(object(loop)["connectivity"] as? String == "portal", "a redirect is not followed: \(loop.output)")
        #expect(object(loop)["portalLocation"] as? String == network.url("/generate_204"))

        try network.setMode("content")
        let content = try check(network, "--probe-url", network.url("/check"), "--probe-expect", "OK")
        #expect(object(content)["connectivity"] as? String == "portal", "\(content.output)")

        try network.setMode("huge")
        let huge = try check(network, "--probe-url", network.url("/check"), "--probe-expect", "OK")
        #expect(object(huge)["connectivity"] as? String == "portal", "only a prefix is read: \(huge.output)")

        try network.setMode("silent")
        let silent = try check(network, "--probe-url", network.url(), "--probe-timeout", "1")
        #expect(silent.status == 1)
        #expect(object(silent)["connectivity"] as? String == "limited", "\(silent.output)")
        #expect((object(silent)["connectivityReason"] as? String)?.hasPrefix("no answer within 1 s") == true, "\(silent.output)")

        let refused = try check(network, "--probe-url", network.url(port: 81))
        #expect(object(refused)["connectivity"] as? String == "limited", "no server: \(refused.output)")

        try network.setMode("204")
        let tls = try check(network, "--probe-url", network.url(scheme: "https"))
        #expect(object(tls)["connectivity"] as? String == "limited", "HTTPS to an HTTP server: \(tls.output)")

        try network.client.ip("route", "del", "default")
        let none = try check(network, "--probe-url", network.url())
        #expect(none.status == 1)
        #expect(object(none)["connectivity"] as? String == "none" && object(none)["reachable"] as? Bool == false, "\(none.output)")
    }

    @Test func theURLComesFromTheCommandLineOrTheEnvironmentAndMustParse() throws {
        let network = try ProbeNetwork("cprobeurl")
        defer { network.stop() }
        let fromEnvironment = try run(["/usr/bin/env", "REACH_PROBE_URL=\(network.url())", reachBinary, "check",
                                       "--netns", network.client.name, "--connectivity"], check: false)
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.output)\(fromEnvironment.error)")
        #expect(fromEnvironment.output.contains("connectivity full"), "\(fromEnvironment.output)")

        let missing = try run(["/usr/bin/env", "-u", "REACH_PROBE_URL", reachBinary, "check", "--netns", network.client.name,
                               "--connectivity"], check: false)
        #expect(missing.status == 2 && missing.error.split(separator: "\n").count == 1, "\(missing.error)")
        #expect(missing.error.contains("--probe-url"))
        for bad in ["htp:/x", "ftp://10.77.0.1/", "http://", "not a url"] {
            let result = try check(network, "--probe-url", bad)
            #expect(result.status == 2, "\(bad): \(result.output)")
            #expect(result.error.split(separator: "\n").count == 1 && result.error.contains("invalid probe URL"), "\(bad): \(result.error)")
        }
        let empty = try check(network, "--probe-url", network.url(), "--probe-expect", "")
        #expect(empty.status == 2 && empty.error.contains("invalid probe expectation"), "\(empty.error)")
        let alone = try reach("check", "--netns", network.client.name, "--probe-url", network.url())
        #expect(alone.status == 2 && alone.error.contains("--probe-url needs --connectivity"), "\(alone.error)")
    }

    @Test func watchFollowsTheServerAndTheRoutes() throws {
        let network = try ProbeNetwork("cprobewatch")
        defer { network.stop() }
        let watch = try ReachProcess(["watch", "--json", "--netns", network.client.name, "--connectivity",
                                      "--probe-url", network.url(), "--probe-interval", "0.2"])
        defer { watch.stop() }
        #expect(watch.waitForLine(containing: "\"connectivity\":\"full\""))
        try network.setMode("redirect http://10.77.0.1/login")
        #expect(watch.waitForLine(containing: "\"connectivity\":\"portal\"", "\"portalLocation\":\"http://10.77.0.1/login\""))
        try network.setMode("204")
        #expect(watch.waitForLine(containing: "\"connectivity\":\"full\"", "\"time\""))
        try network.client.ip("route", "del", "default")
        #expect(watch.waitForLine(containing: "\"connectivity\":\"none\"", "\"reachable\":false"))
    }

    /// Without an interval, a watch probes only on changes: while nothing changes, no thread
    /// wakes but the two that every watch has, which read the kernel's messages (`netlink`) and
    /// watch the namespace files (`inotify`; other tests' namespaces come and go meanwhile): a
    /// timer or a poll would wake another. libdispatch ends a worker thread that idled for some
    /// seconds, and a thread that ends is not counted. IPv6 is off: its address's duplicate
    /// detection would be a change.
    @Test func aWatchWithoutAnIntervalIsIdleBetweenChanges() throws {
        let network = try ProbeNetwork("cprobeidle", ipv6: false)
        defer { network.stop() }
        let watch = try ReachProcess(["watch", "--netns", network.client.name, "--connectivity", "--probe-url", network.url()])
        defer { watch.stop() }
        #expect(watch.waitForLine(containing: "connectivity full"))
        let pid = try #require(watch.processIdentifier)
        usleep(1_000_000)
        let before = contextSwitches(of: pid)
        usleep(3_000_000)
        let after = contextSwitches(of: pid)
        let woken = before.compactMap { thread, count -> String? in
            guard let later = after[thread], later != count else { return nil }
            let name = (try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/comm", encoding: .utf8)) ?? "?"
            return name.hasPrefix("netlink") || name.hasPrefix("inotify") ? nil : "\(name.dropLast()) \(count) to \(later)"
        }
        #expect(woken.isEmpty, "threads woke while nothing changed: \(woken)")
        try network.client.ip("link", "set", "c0", "down")
        #expect(watch.waitForLine(containing: "connectivity none"))
    }

    @Test func waitForLinksDefaultRoutesAndConnectivity() throws {
        let network = try ProbeNetwork("cprobewait")
        defer { network.stop() }
        let ns = network.client.name
        #expect(try reach("wait", "--netns", ns, "--interface", "c0", "--timeout", "5").status == 0)
        #expect(try reach("wait", "--netns", ns, "--interface", "c0", "-4", "--timeout", "5").status == 0)
        #expect(try reach("wait", "--netns", ns, "--interface", "c0", "-6", "--timeout", "0.3").status == 1, "no global IPv6 address")
        #expect(try reach("wait", "--netns", ns, "--interface", "c0", "--interface", "d0", "--timeout", "0.3").status == 1)
        #expect(try reach("wait", "--netns", ns, "--interface", "c0", "--interface", "d0", "--any", "--timeout", "5").status == 0)
        #expect(try reach("wait", "--netns", ns, "--any", "--timeout", "5").status == 0)
        #expect(try reach("wait", "--netns", ns, "-4", "--timeout", "5").status == 0)
        #expect(try reach("wait", "--netns", ns, "-6", "--timeout", "0.3").status == 1, "no IPv6 default route")
        #expect(try reach("wait", "--netns", ns, "--connectivity", "full", "--probe-url", network.url(), "--timeout", "10").status == 0)
        try network.setMode("content")
        #expect(try reach("wait", "--netns", ns, "--connectivity", "portal", "--probe-url", network.url(), "--timeout", "10").status == 0)
        #expect(try reach("wait", "--netns", ns, "--connectivity", "full", "--probe-url", network.url(), "--timeout", "0.5").status == 1)
        let bad = try reach("wait", "--netns", ns, "-4", "10.77.0.1")
        #expect(bad.status == 2 && bad.error.split(separator: "\n").count == 1, "\(bad.error)")
        #expect(try reach("wait", "--netns", ns, "--connectivity", "none", "--probe-url", network.url()).status == 2)

        // A link that comes later: the wait ends when it is usable.
        let waiting = try ReachProcess(["wait", "--netns", ns, "--interface", "d0", "-4", "--timeout", "30"])
        defer { waiting.stop() }
        usleep(200_000)
        try network.client.batch(["link add d0 type veth peer name d1", "link set d0 up"])
        usleep(200_000)
        #expect(waiting.isRunning, "d0 has no carrier and no address yet")
        try network.client.batch(["link set d1 up", "address add 10.78.0.1/24 dev d0"])
        #expect(waiting.exitStatus() == 0)

        // A probe that never answers: the wait ends at its timeout, not at the probe's.
        try network.setMode("silent")
        let silent = try ReachProcess(["wait", "--netns", ns, "--connectivity", "full", "--probe-url", network.url(),
                                       "--probe-timeout", "600", "--timeout", "0.5"])
        defer { silent.stop() }
        #expect(silent.exitStatus() == 1)
        try network.setMode("content")

        // A portal that lets the user through: a wait with an interval sees it.
        let portal = try ReachProcess(["wait", "--netns", ns, "--connectivity", "full", "--probe-url", network.url(),
                                       "--probe-interval", "0.2", "--timeout", "30"])
        defer { portal.stop() }
        usleep(300_000)
        #expect(portal.isRunning)
        try network.setMode("204")
        #expect(portal.exitStatus() == 0)
    }
}

/// The context switches so far of each thread of process `pid`, by thread id.
private func contextSwitches(of pid: Int32) -> [String: Int] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    var counts: [String: Int] = [:]
    for task in tasks {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
        counts[task] = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
            .compactMap { $0.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
            .reduce(0, +)
    }
    return counts
}
