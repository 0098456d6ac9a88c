import Dispatch
import Foundation
import LinuxReachability
import Netlink
import NetnsTestSupport
import ReachabilityConnectivity
import Testing

@Suite("Connectivity probe")
struct ConnectivityProbeTests {
    @Test func aProbeNeedsAnHTTPURLAndPositiveDurations() throws {
        for bad in ["", "htp:/x", "ftp://192.0.2.1/", "http://", "file:///etc/hosts", "no url"] {
            #expect(throws: ConnectivityError.self, "\(bad)") { try ConnectivityProbe(url: bad) }
        }
        #expect(throws: ConnectivityError.invalidDuration(name: "probe timeout", reason: "must be more than 0 seconds")) {
            try ConnectivityProbe(url: "http://192.0.2.1/", timeout: .zero)
        }
        #expect(throws: ConnectivityError.self) { try ConnectivityProbe(url: "http://192.0.2.1/", interval: .seconds(-1)) }
        let probe = try ConnectivityProbe(url: "HTTP://[2001:db8::1]:8080/generate_204")
        #expect(probe.url == "http://[2001:db8::1]:8080/generate_204")
        #expect(probe.interval == nil && probe.expectation == .noContent)
        let error = ConnectivityError.invalidURL("a\nb", reason: "Bad scheme")
        #expect(!error.description.contains("\n"), "one line: \(error)")
    }

    @Test func answersAreJudgedAsAndroidAndNetworkManagerDo() {
        typealias R = HTTPProbeRequest
        #expect(R.judge(status: 204, body: [], expectation: .noContent, location: nil).0 == .full)
        #expect(R.judge(status: 200, body: [], expectation: .noContent, location: nil).0 == .portal)
        let redirect = R.judge(status: 302, body: [], expectation: .noContent, location: "http://login.test/")
        #expect(redirect.0 == .portal && redirect.location == "http://login.test/")
        #expect(R.judge(status: 307, body: Array("OK".utf8), expectation: .bodyPrefix("OK"), location: nil).0 == .portal)
        #expect(R.judge(status: 200, body: Array("OK\n".utf8), expectation: .bodyPrefix("OK"), location: nil).0 == .full)
        #expect(R.judge(status: 200, body: Array("<html>".utf8), expectation: .bodyPrefix("OK"), location: nil).0 == .portal)
        #expect(R.judge(status: 503, body: Array("OK".utf8), expectation: .bodyPrefix("OK"), location: nil).0 == .portal)
        #expect(Connectivity.none < .limited && Connectivity.limited < .portal && Connectivity.portal < .full)
    }
}

@Suite("Connectivity in namespaces", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ConnectivityNamespaceTests {
    @Test func aProbeGoesOutThroughTheLinkItIsBoundTo() async throws {
        let network = try ProbeNetwork("lprobebind")
        defer { network.stop() }
        let namespace = try NetworkNamespace.named(network.client.name)
        let probe = try ConnectivityProbe(url: network.url(), timeout: .seconds(2))
        let through = probe.check(through: "c0", in: namespace)
        #expect(through.connectivity == .full && through.interfaceName == "c0" && through.httpStatus == 204, "\(through)")
        // Bound to the loopback, the server cannot be reached, whatever the routes say.
        let loopback = probe.check(through: "lo", in: namespace)
        #expect(loopback.connectivity == .limited, "\(loopback)")
        let answer = try await ReachabilityProbe(namespace: namespace).answer(for: .internet).answer
        #expect(probe.check(answer, in: namespace).connectivity == .full)
    }

    /// The probing namespace's own files in `/etc/netns`: `hosts`, and a resolver
    /// configuration with no name server, so that nothing asks the machine's. Returns what
    /// removes them.
    private static func namespaceFiles(of network: ProbeNetwork, hosts: String) throws -> () -> Void {
        let directory = "/etc/netns/\(network.client.name)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let remove = { _ = try? FileManager.default.removeItem(atPath: directory) }
        do {
            try hosts.write(toFile: directory + "/hosts", atomically: true, encoding: .utf8)
            try "options attempts:1 timeout:1\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        } catch {
            remove()
            throw error
        }
        return remove
    }

    @Test func aHostNameInTheURLIsResolvedInTheNamespace() throws {
        let network = try ProbeNetwork("lprobename")
        defer { network.stop() }
        let removeFiles = try Self.namespaceFiles(of: network, hosts: "10.77.0.1 portal.test\n")
        defer { removeFiles() }
        let namespace = try NetworkNamespace.named(network.client.name)
        let found = try ConnectivityProbe(url: "http://portal.test/generate_204").check(through: "c0", in: namespace)
        #expect(found.connectivity == .full, "\(found)")
        let unknown = try ConnectivityProbe(url: "http://unknown.test/").check(through: "c0", in: namespace)
        #expect(unknown.connectivity == .limited, "\(unknown)")
    }

    /// libcurl is told where to connect, never left to resolve the URL's name with the
    /// machine's resolver: an international name, which libcurl turns into punycode in a UTF-8
    /// locale (and refuses in the C locale), `localhost`, a name in capitals and one written
    /// absolute (a trailing dot, dropped as a target's is) go where the namespace's hosts file
    /// says.
    @Test func libcurlConnectsWhereTheNamespaceResolvedTheName() throws {
        let network = try ProbeNetwork("lprobeidn")
        defer { network.stop() }
        let removeFiles = try Self.namespaceFiles(of: network, hosts: "10.77.0.1 portal.test localhost bücher.test\n")
        defer { removeFiles() }
        let namespace = try NetworkNamespace.named(network.client.name)
        for url in ["http://localhost/generate_204", "http://PORTAL.test/generate_204", "http://portal.test./generate_204"] {
            let found = try ConnectivityProbe(url: url).check(through: "c0", in: namespace)
            #expect(found.connectivity == .full, "\(url): \(found)")
        }
        // The locale is the process's: set for this probe alone.
        let previous = setlocale(LC_CTYPE, nil).map { String(cString: $0) } ?? "C"
        #expect(setlocale(LC_CTYPE, "C.UTF-8") != nil)
        defer { setlocale(LC_CTYPE, previous) }
        let international = try ConnectivityProbe(url: "http://bücher.test/generate_204").check(through: "c0", in: namespace)
        #expect(international.connectivity == .full, "\(international)")
    }

    @Test func aMonitorProbesOnEachChangeAndAtItsInterval() async throws {
        let network = try ProbeNetwork("lprobemon")
        defer { network.stop() }
        let probe = try ConnectivityProbe(url: network.url(), timeout: .seconds(2), interval: .milliseconds(200))
        let monitor = try ConnectivityMonitor(namespace: .named(network.client.name), probe: probe)
        let seen = Locked<[ConnectivityUpdate]>([])
        monitor.onChange = { update in seen.withLock { $0.append(update) } }
        monitor.startListening()
        defer { monitor.stopListening() }
        #expect(eventually { seen.withLock { $0.last?.connectivity == .full } })
        #expect(seen.withLock { $0.first?.report.interfaceName } == "c0", "\(seen.withLock { $0 })")
        try network.setMode("redirect http://10.77.0.1/login")
        #expect(eventually { seen.withLock { $0.last?.report.portalLocation == "http://10.77.0.1/login" } })
        try network.client.ip("link", "set", "c0", "down")
        #expect(eventually { seen.withLock { $0.last?.connectivity == Connectivity.none && $0.last?.answer.isReachable == false } })
        try network.setMode("204")
        try network.client.batch(["link set c0 up", "route replace default via 10.77.0.1"])
        #expect(eventually { seen.withLock { $0.last?.connectivity == .full } })
        #expect(monitor.latest?.connectivity == .full)
        // Each change once: an unchanged result at the interval is not told again.
        let count = seen.withLock { $0.count }
        usleep(600_000)
        #expect(seen.withLock { $0.count } == count)

        var iterator = monitor.updates().makeAsyncIterator()
        #expect(await iterator.next()?.connectivity == .full, "a sequence starts with the latest update")
    }

    /// Each reachable answer is told as its probe starts, before the update its probe gives;
    /// an answer that is not reachable is probed for nothing and told only by its update.
    @Test func aProbesStartIsToldBeforeItsUpdate() throws {
        let network = try ProbeNetwork("lprobestart")
        defer { network.stop() }
        let monitor = try ConnectivityMonitor(namespace: .named(network.client.name), probe: ConnectivityProbe(url: network.url()))
        let told = Locked<[String]>([])
        @Sendable func gateway(_ answer: ReachabilityAnswer) -> String { answer.gateway?.description ?? "-" }
        monitor.onProbeStart = { answer in told.withLock { $0.append("start \(gateway(answer))") } }
        monitor.onChange = { update in told.withLock { $0.append("\(update.connectivity) \(gateway(update.answer))") } }
        monitor.startListening()
        defer { monitor.stopListening() }
        #expect(eventually { told.withLock { $0 } == ["start 10.77.0.1", "full 10.77.0.1"] }, "\(told.withLock { $0 })")
        // Another router on the link: a new answer, probed again.
        try network.client.ip("route", "replace", "default", "via", "10.77.0.9")
        #expect(eventually { told.withLock { $0 } == ["start 10.77.0.1", "full 10.77.0.1", "start 10.77.0.9", "full 10.77.0.9"] },
                "\(told.withLock { $0 })")
        // Not reachable: told by its update alone.
        try network.client.ip("link", "set", "c0", "down")
        #expect(eventually { told.withLock { $0.last } == "none -" }, "\(told.withLock { $0 })")
        #expect(told.withLock { $0.count } == 5, "\(told.withLock { $0 })")
    }
}

@Suite("Connectivity of paths", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct PathConnectivityTests {
    @Test func eachPathComesWithWhatTheProbeFoundThroughItsFirstInterface() async throws {
        let network = try ProbeNetwork("lprobepath")
        defer { network.stop() }
        let probe = try ConnectivityProbe(url: network.url(), timeout: .seconds(2))
        let monitor = NetworkPathMonitor(namespace: try .named(network.client.name))
        defer { monitor.cancel() }
        var updates = monitor.connectivityUpdates(probe: probe).makeAsyncIterator()
        let first = await updates.next()
        #expect(first?.path.status == .satisfied && first?.connectivity == .full, "\(String(describing: first))")
        #expect(first?.report.interfaceName == "c0")
        try network.client.ip("route", "del", "default")
        let second = await updates.next()
        #expect(second?.path.status == .unsatisfied && second?.connectivity == Connectivity.none, "\(String(describing: second))")
    }
}

@Suite("Connectivity monitors' lifetimes", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ConnectivityMonitorLifetimeTests {
    /// Two monitors on one queue: one that stops itself from its own callback neither waits for
    /// that queue nor disturbs the other.
    @Test func aMonitorStopsItselfOnAQueueItShares() throws {
        let network = try ProbeNetwork("lprobeshare")
        defer { network.stop() }
        let probe = try ConnectivityProbe(url: network.url(), timeout: .seconds(2))
        let queue = DispatchQueue(label: "shared")
        let first = try ConnectivityMonitor(namespace: .named(network.client.name), probe: probe, queue: queue)
        let second = try ConnectivityMonitor(target: .address(IPAddress("10.77.0.1")!), namespace: .named(network.client.name),
                                             probe: probe, queue: queue)
        let seen = Locked<[String]>([])
        first.onChange = { [weak first] update in
            seen.withLock { $0.append("first \(update.connectivity)") }
            first?.stopListening()
        }
        second.onChange = { update in seen.withLock { $0.append("second \(update.connectivity)") } }
        first.startListening()
        second.startListening()
        defer { second.stopListening() }
        #expect(eventually { seen.withLock { Set($0) } == ["first full", "second full"] })
        #expect(first.latest == nil, "stopped: no latest update")
        #expect(second.latest?.connectivity == .full)
    }

    /// A sequence keeps its monitor: iterated on a monitor nobody else holds, it gets the first
    /// update; a sequence made after the namespace went away ends after the last update.
    @Test func aSequenceKeepsItsMonitorAndEndsWithIt() async throws {
        let network = try ProbeNetwork("lprobeseq")
        defer { network.stop() }
        let probe = try ConnectivityProbe(url: network.url(), timeout: .seconds(2))
        var updates = try ConnectivityMonitor(namespace: .named(network.client.name), probe: probe).updates().makeAsyncIterator()
        #expect(await updates.next()?.connectivity == .full)

        let monitor = try ConnectivityMonitor(namespace: .named(network.client.name), probe: probe)
        var all = monitor.updates().makeAsyncIterator()
        #expect(await all.next()?.connectivity == .full)
        network.client.delete()
        #expect(await all.next()?.connectivity == Connectivity.none)
        #expect(await all.next() == nil)
        var late = monitor.updates().makeAsyncIterator()
        let last = await late.next()
        #expect(last?.connectivity == Connectivity.none && last?.answer.isReachable == false, "\(String(describing: last))")
        #expect(await late.next() == nil, "a sequence made after the end ends too")
    }

    @Test func anEmptyExpectedTextIsRefused() {
        #expect(throws: ConnectivityError.self) { try ConnectivityProbe(url: "http://192.0.2.1/", expecting: .bodyPrefix("")) }
    }
}

/// The snippets of the Getting Started article, run against a test's own probe server.
@Suite("Connectivity documentation snippets", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ConnectivityDocumentationSnippetTests {
    @Test func gettingStarted() async throws {
        let network = try ProbeNetwork("lprobedoc")
        defer { network.stop() }
        let namespace = try NetworkNamespace.named(network.client.name)
        let android = try ConnectivityProbe(url: network.url())
        let networkManager = try ConnectivityProbe(url: network.url("/check_network_status.txt"),
                                                   expecting: .bodyPrefix("NetworkManager is online"),
                                                   timeout: .seconds(3))
        #expect(networkManager.check(through: "c0", in: namespace).connectivity == .portal, "a 204 has no body")

        let (answer, _) = try await ReachabilityProbe(namespace: namespace).answer(for: .internet)
        let report = android.check(answer, in: namespace)
        switch report.connectivity {
        case .full: print("online through", report.interfaceName ?? "?")
        case .portal: print("captive portal:", report.portalLocation ?? report.reason ?? "")
        case .limited: print("no answer:", report.reason ?? "")
        case .none: print("no route")
        }
        #expect(report.connectivity == .full)

        var probe = android
        probe.interval = .seconds(60)
        let monitor = try ConnectivityMonitor(target: .internet, namespace: namespace, probe: probe)
        let told = Locked<[ConnectivityUpdate]>([])
        monitor.onChange = { update in
            print(update.connectivity, update.answer.interface?.name ?? "-")
            told.withLock { $0.append(update) }
        }
        monitor.startListening()
        defer { monitor.stopListening() }
        #expect(eventually { told.withLock { $0.first?.connectivity == .full } })
    }
}
