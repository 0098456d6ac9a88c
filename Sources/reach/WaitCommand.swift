#if CommandLineTool
import ArgumentParser
import Dispatch
import Netlink
import LinuxReachability
import ReachabilityConnectivity

/// `reach wait`: block until the network is up, as systemd-networkd-wait-online and nm-online do.
struct WaitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Wait until the network is up (exit 0), or until the timeout (exit 1).",
        discussion: """
            Without options, waits until TARGET (default: the internet) is reachable. \
            --interface NAME (repeatable) waits until every named link is usable: up, with \
            carrier, and with an address (IPv4 with -4, global IPv6 with -6, either without); \
            with --any one of them is enough, and --any alone waits for any link but loopback. \
            -4 and -6 without --interface wait for a usable IPv4 or IPv6 default route. \
            --connectivity LEVEL waits until an HTTP probe of the URL you name, through the \
            link of TARGET's answer, finds LEVEL or better (limited < portal < full); add \
            --probe-interval to probe again while nothing changes. All that is asked must hold \
            at once. Waits on kernel events, never by polling. Without a timeout it waits \
            forever.
            """)

    @Argument(help: "An IPv4 or IPv6 address (fe80::1%eth0 for a link-local one) or a host name (default: the internet).")
    var target: String?

    @Option(name: .customLong("interface"), help: ArgumentHelp("Wait for this link to be usable (repeatable).", valueName: "NAME"))
    var interfaces: [String] = []

    @Flag(name: [.customShort("4"), .customLong("ipv4")], help: "Wait for IPv4: a default route, or an address on the links.")
    var ipv4 = false

    @Flag(name: [.customShort("6"), .customLong("ipv6")], help: "Wait for IPv6: a default route, or a global address on the links.")
    var ipv6 = false

    @Flag(help: "One usable link is enough (of those named, or any but loopback).")
    var any = false

    @Option(help: ArgumentHelp("Wait for this connectivity or better (with --probe-url or $REACH_PROBE_URL).", valueName: "LEVEL"))
    var connectivity: Connectivity?

    @OptionGroup var probeOptions: ProbeOptions

    @OptionGroup var probeInterval: ProbeIntervalOption

    @Option(help: ArgumentHelp("Give up after this many seconds (exit 1).", valueName: "SECONDS"))
    var timeout: Double?

    @OptionGroup var namespaceOption: NamespaceOption

    func validate() throws {
        if let timeout, !(timeout >= 0 && timeout.isFinite) { throw ValidationError("--timeout must be a number of seconds, 0 or more") }
        if connectivity == Connectivity.none { throw ValidationError("--connectivity takes limited, portal or full") }
        try probeOptions.validate(connectivityAsked: connectivity != nil)
        try probeInterval.validate(connectivityAsked: connectivity != nil)
        if (ipv4 || ipv6), interfaces.isEmpty, !any, target != nil {
            throw ValidationError("-4 and -6 apply to the internet's default routes or to links, not to a TARGET")
        }
        for name in interfaces where name.isEmpty || name.utf8.count > Link.longestAlternativeName || name.contains("/") || name.contains(where: \.isWhitespace) {
            throw ValidationError("--interface \(displayed(name)) is not a link name")
        }
    }

    func run() throws {
        let namespace = try namespaceOption.namespace()
        let parsed = try target.map { text throws(ReachabilityError) in try ReachabilityTarget(parsing: text) } ?? .internet
        let outcome = EndOfMonitoring()
        let queue = DispatchQueue(label: "reach wait")
        // Each condition starts what feeds it and returns how to stop that (which keeps it).
        var conditions: [(WaitConditions) throws -> @Sendable () -> Void] = []
        let families = Set((ipv4 ? [AddressFamily.ipv4] : []) + (ipv6 ? [AddressFamily.ipv6] : []))
        let byLinks = !interfaces.isEmpty || any
        if byLinks {
            let readiness = LinkReadiness(names: interfaces, requiresAll: !any, families: families)
            conditions.append { conditions in try Self.watchLinks(readiness, in: namespace, queue: queue, conditions: conditions) }
        } else if !families.isEmpty {
            conditions.append { conditions in try Self.watchDefaultRoutes(families, in: namespace, queue: queue, conditions: conditions) }
        }
        var probe: ConnectivityProbe?
        if let level = connectivity {
            var asked = try probeOptions.probe(interval: probeInterval.seconds)
            if families.count == 1 { asked.addressFamily = families.first }
            probe = asked
            conditions.append { conditions in try Self.watchConnectivity(of: parsed, at: level, probe: asked, in: namespace,
                                                                        queue: queue, conditions: conditions) }
        } else if !byLinks, families.isEmpty {
            conditions.append { conditions in
                let index = conditions.add()
                let monitor = try ReachabilityMonitor(target: parsed, namespace: namespace, queue: queue)
                monitor.onChange = { _, answer in conditions.set(index, answer.isReachable, answer: answer) }
                monitor.startListening()
                return monitor.stopListening
            }
        }
        let deadline = timeout.map(Self.deadline(after:)) ?? .distantFuture
        let waiting = WaitConditions(outcome: outcome, count: conditions.count)
        let stops = try conditions.map { try $0(waiting) }
        // Every condition is looked at once (`--timeout 0` asks "up now?", and then gives a
        // probe its own timeout); then a futex wait until the deadline: no polling.
        let firstLook = probe.map { timeout == 0 ? Self.deadline(after: Double($0.timeout.components.seconds) + 1) : deadline }
            ?? .distantFuture
        waiting.waitForFirstReports(until: firstLook)
        let finished = outcome.wait(timeout: deadline)
        for stop in stops { stop() }
        switch finished {
        case .timedOut: throw ExitCode(1)
        case .ended(let error):
            Output.error(error.description)
            throw ExitCode(2)
        case .reached: return
        }
    }

    /// Watches the connectivity behind the answer for `target`. A new reachable answer makes the
    /// condition false until its own probe has reported: the last probe was through another
    /// link, or of another route.
    private static func watchConnectivity(of target: ReachabilityTarget, at level: Connectivity, probe: ConnectivityProbe,
                                          in namespace: NetworkNamespace, queue: DispatchQueue,
                                          conditions: WaitConditions) throws -> @Sendable () -> Void {
        let index = conditions.add()
        let monitor = try ConnectivityMonitor(target: target, namespace: namespace, probe: probe, queue: queue)
        // Both closures run on `queue`, in order.
        monitor.onChange = { update in
            conditions.set(index, update.connectivity >= level, answer: update.answer)
        }
        monitor.onProbeStart = { _ in
            if conditions.isReported(index) { conditions.set(index, false) }
        }
        monitor.startListening()
        return monitor.stopListening
    }

    /// Watches the links of the namespace for `readiness`.
    private static func watchLinks(_ readiness: LinkReadiness, in namespace: NetworkNamespace, queue: DispatchQueue,
                                   conditions: WaitConditions) throws -> @Sendable () -> Void {
        let index = conditions.add()
        let subscription = try NetlinkSubscription(namespace: namespace)
        let observation = subscription.observe(on: queue, onTermination: { conditions.end($0) }) { _ in
            conditions.set(index, readiness.isMet(by: subscription.state))
        }
        return observation.cancel
    }

    /// Watches the namespace's path for usable default routes of `families`.
    private static func watchDefaultRoutes(_ families: Set<AddressFamily>, in namespace: NetworkNamespace, queue: DispatchQueue,
                                           conditions: WaitConditions) throws -> @Sendable () -> Void {
        let index = conditions.add()
        let monitor = NetworkPathMonitor(namespace: namespace)
        monitor.pathUpdateHandler = { path in
            conditions.set(index, (!families.contains(.ipv4) || path.supportsIPv4) && (!families.contains(.ipv6) || path.supportsIPv6))
        }
        if let error = monitor.error { throw error }
        monitor.start(queue: queue)
        return monitor.cancel
    }

    /// The moment `seconds` from now, rounded up to the nanosecond; a timeout past what the
    /// clock can count (some 292 years) waits forever, as none does.
    static func deadline(after seconds: Double) -> DispatchTime {
        let nanoseconds = (seconds * 1e9).rounded(.up)
        guard nanoseconds < Double(Int64.max / 2) else { return .distantFuture }
        return .now() + .nanoseconds(Int(nanoseconds))
    }
}
#endif
