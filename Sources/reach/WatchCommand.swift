#if CommandLineTool
import ArgumentParser
import Dispatch
import Netlink
import LinuxReachability
import ReachabilityConnectivity

/// `reach watch`: the answer for each target now, then one line per real change.
struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print the answer for each target now, then one line per change.",
        discussion: """
            Each TARGET is an IPv4 or IPv6 address (a link-local one with its link: fe80::1%eth0) or \
            a host name; without one, the internet. \
            With --json every line is a `check` object plus "time" (ISO 8601). Lines are \
            flushed one by one. With --connectivity each answer comes with what an HTTP probe \
            of the URL you name found through its link (as `check --connectivity`), probed on \
            each change and, with --probe-interval, that often while the answer stays. Runs \
            until interrupted; if the namespace is deleted, the last lines say "monitoring \
            ended" and reach exits with status 2.
            """)

    @Argument(help: "Addresses or host names (default: the internet).")
    var targets: [String] = []

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @OptionGroup var namespaceOption: NamespaceOption
    @OptionGroup var subscriptionOption: SubscriptionOption

    @Flag(help: "Probe the connectivity behind each answer over HTTP (with --probe-url or $REACH_PROBE_URL).")
    var connectivity = false

    @OptionGroup var probeOptions: ProbeOptions

    @OptionGroup var probeInterval: ProbeIntervalOption

    /// The subscription and the monitors live as long as the process prints.
    private static let keepAlive = Locked<(NetlinkSubscription?, [ReachabilityMonitor], [ConnectivityMonitor])>((nil, [], []))

    func validate() throws {
        try probeOptions.validate(connectivityAsked: connectivity)
        try probeInterval.validate(connectivityAsked: connectivity)
    }

    func run() throws {
        let parsed = try targets.map { text throws(ReachabilityError) in (text, try ReachabilityTarget(parsing: text)) }
        let namespace = try namespaceOption.namespace()
        // Opened first, so the monitors' engine finds it with the options asked for.
        let subscription = try subscriptionOption.openSubscription(in: namespace)
        let ended = EndOfMonitoring()
        if connectivity {
            try watchConnectivity(of: parsed, in: namespace, subscription: subscription, ended: ended)
        }
        // The callbacks run on the namespace's evaluation queue itself, inside the round that
        // judged the change, on the thread that read the kernel's message: the lines of every
        // target come out in order, with no thread woken between the kernel and the line. A
        // line is one short write; should stdout block, the subscription's buffer absorbs the
        // events meanwhile and, if it overflows, the state is read again.
        let queue = try ReachabilityMonitor.evaluationQueue(in: namespace)
        // One line buffer for every target's lines, kept from line to line (the callbacks run
        // one at a time, on that queue; the lock is uncontended).
        let lineBuffer = Locked(ByteBuffer())
        let monitors = try Self.labelled(parsed)
            .map { text, target throws(ReachabilityError) -> ReachabilityMonitor in
                let monitor = try ReachabilityMonitor(target: target, namespace: namespace, queue: queue)
                let json = self.json
                monitor.onChange = { _, answer in
                    if json {
                        Self.printTimestamped(answer.json(target: text, addresses: answer.addresses))
                    } else {
                        lineBuffer.withLock { buffer in
                            buffer.removeAll()
                            appendISO8601Now(to: &buffer)
                            buffer.append("  ")
                            answer.writeHumanLine(target: text ?? "internet", into: &buffer)
                            buffer.append(UInt8(ascii: "\n"))
                            buffer.withBytes { Output.lines($0) }
                        }
                    }
                    ended.note(answer)
                    Output.yieldToReader()
                }
                return monitor
            }
        Self.keepAlive.withLock { $0 = (subscription, monitors, []) }
        for monitor in monitors { monitor.startListening() }
        // The last answers of the other targets came in the same delivery: let them print.
        try Self.printUntilTheEnd(ended) { for monitor in monitors { monitor.callbackQueue.sync {} } }
    }

    /// Prints each target's answer with its connectivity, as `check --connectivity` does, then
    /// every change of either, until interrupted or until the namespace goes away.
    private func watchConnectivity(of parsed: [(String, ReachabilityTarget)], in namespace: NetworkNamespace,
                                   subscription: NetlinkSubscription, ended: EndOfMonitoring) throws -> Never {
        let probe = try probeOptions.probe(interval: probeInterval.seconds)
        // One queue for every target's lines: they come out whole and in order.
        let queue = DispatchQueue(label: "reach watch")
        let json = self.json
        let monitors = try Self.labelled(parsed)
            .map { text, target throws(ReachabilityError) -> ConnectivityMonitor in
                let monitor = try ConnectivityMonitor(target: target, namespace: namespace, probe: probe, queue: queue)
                monitor.onChange = { update in
                    let answer = update.answer
                    if json {
                        Self.printTimestamped(answer.json(target: text, addresses: answer.addresses, connectivity: update.report))
                    } else {
                        Output.line(iso8601Now() + "  " + answer.humanLine(target: text ?? "internet") + "  " + update.report.humanText)
                    }
                    ended.note(answer)
                    Output.yieldToReader()
                }
                return monitor
            }
        Self.keepAlive.withLock { $0 = (subscription, [], monitors) }
        for monitor in monitors { monitor.startListening() }
        try Self.printUntilTheEnd(ended) { queue.sync {} }
    }

    /// The targets with the text each was given as (nil for the internet, watched when none
    /// is given).
    private static func labelled(_ parsed: [(String, ReachabilityTarget)]) -> [(String?, ReachabilityTarget)] {
        parsed.isEmpty ? [(nil, .internet)] : parsed.map { ($0.0, $0.1) }
    }

    /// Prints a `check` object with `"time"` added, as one line.
    private static func printTimestamped(_ object: JSON) {
        guard case .object(let fields) = object else { return }
        Output.line(JSON.object(fields + [("time", .string(iso8601Now()))]).serialized)
    }

    /// Waits, while the monitors print from their queues, until the namespace goes away or the
    /// process is interrupted; then lets the last lines out (`drain`) and exits 2. The main
    /// thread sleeps in a futex with no timeout: nothing in the process wakes while nothing
    /// changes.
    private static func printUntilTheEnd(_ ended: EndOfMonitoring, drain: () -> Void) throws -> Never {
        Output.exitWhenTheReaderGoes()
        let outcome = ended.wait(timeout: .distantFuture)
        drain()
        if case .ended(let error) = outcome { Output.error(error.description) }
        throw ExitCode(2)
    }
}

/// Wakes the main thread of `watch` and `wait`: when what `wait` waits for is reached, or when
/// monitoring ended because the namespace was deleted (the answer's reason says so).
final class EndOfMonitoring: Sendable {
    /// How a wait finished.
    enum Outcome {
        case reached
        case ended(NetlinkError)
        case timedOut
    }

    private let outcome = Locked<Outcome?>(nil)
    private let signal = DispatchSemaphore(value: 0)
    /// Signalled after every answer; ``waitForFirstAnswer()`` takes one signal, the others are
    /// never waited for.
    private let answers = DispatchSemaphore(value: 0)

    /// Looks at an answer: a reached target or the end of monitoring wakes the waiter once.
    func note(_ answer: ReachabilityAnswer, reachable: Bool = false) {
        defer { answers.signal() }
        if case .monitoringEnded(let error) = answer.reason { finish(.ended(error)) } else if reachable { finish(.reached) }
    }

    /// Wakes the waiter with `next`, unless an outcome was noted before.
    func finish(_ next: Outcome) {
        let first = outcome.withLock { outcome -> Bool in
            guard outcome == nil else { return false }
            outcome = next
            return true
        }
        if first { signal.signal() }
    }

    /// Waits for the first answer (a monitor delivers one at once after it starts listening).
    func waitForFirstAnswer() { answers.wait() }

    /// Waits for a reached target or the end of monitoring; one noted already is taken even
    /// if `timeout` has passed.
    func wait(timeout: DispatchTime) -> Outcome {
        guard signal.wait(timeout: timeout) == .success else { return .timedOut }
        return outcome.withLock { $0 } ?? .timedOut
    }
}
#endif
