// latency-listener: the library as a latency harness sees it, with a callback that does no more
// than the peers' (`raw_listener`, `libnl_listener`): print one short line per event.
//
//   latency-listener subscription          one line per NetlinkEvent, printed from the
//                                          subscription's own thread
//   latency-listener reachability ADDRESS  one line per change of a ReachabilityMonitor monitor's
//                                          answer, printed from its default callback queue
//   latency-listener reachability-inline ADDRESS
//                                          the same, with the namespace's evaluation queue as
//                                          the callback queue: printed inside the round, on
//                                          the thread that read the kernel's message
//   latency-listener subscription-hop      one line per NetlinkEvent, printed from a dispatch
//                                          queue the subscription's thread hands it to: the
//                                          cost of one DispatchQueue.async on this machine, the
//                                          least that a callback on a queue of its own can pay
//   latency-listener subscription-lookup ADDRESS
//                                          raw_reachability's logic on the library's Netlink
//                                          layer: after each published batch, on the
//                                          subscription's thread, one lookupRoute for ADDRESS
//                                          and a line when the route or its link's up and
//                                          carrier flags changed. The least an answer costs
//                                          through that layer, without the ReachabilityMonitor engine
//                                          (no classification, flags, state of answers or
//                                          delivery)
//
// Prints READY once subscribed. `reach events` and `reach watch` are measured beside it; they
// add classification, JSON or text formatting, which the peers do not do.
import Dispatch
import Glibc
import Netlink
import LinuxReachability
import Synchronization

/// Writes one line with a single write(2): no buffering between the event and the harness.
func printLine(_ text: StaticString) {
    _ = write(STDOUT_FILENO, text.utf8Start, text.utf8CodeUnitCount)
}

let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "" {
case "subscription":
    let subscription = try NetlinkSubscription()
    let observation = subscription.observeOnSubscriptionThread { event in
        if case .snapshot = event { return }
        printLine("EV\n")
    }
    printLine("READY\n")
    withExtendedLifetime(observation) { while true { pause() } }
case "subscription-hop":
    let subscription = try NetlinkSubscription()
    let queue = DispatchQueue(label: "latency-listener.hop")
    let observation = subscription.observeOnSubscriptionThread { event in
        if case .snapshot = event { return }
        queue.async { printLine("EV\n") }
    }
    printLine("READY\n")
    withExtendedLifetime(observation) { while true { pause() } }
case "subscription-lookup" where arguments.count == 3:
    guard let address = IPAddress(arguments[2]) else {
        printLine("latency-listener: not an address literal\n")
        exit(2)
    }
    let subscription = try NetlinkSubscription()
    let connection = try NetlinkConnection()
    /// What raw_reachability compares: the kernel's answer, and whether its link is usable.
    struct Answer: Equatable {
        var result: RouteLookupResult?
        var linkReady: Bool
    }
    // Only the subscription's thread touches it; the mutex is never contended.
    let last = Mutex<Answer?>(nil)
    let observation = subscription.observeOnSubscriptionThread { [subscription] _ in
        let result = try? connection.lookupRoute(to: address)
        let linkReady = result?.route?.outputLinkIndex.flatMap { subscription.state.links[$0] }
            .map { $0.flags.isSuperset(of: [.up, .lowerUp]) } ?? false
        let answer = Answer(result: result, linkReady: linkReady)
        let changed = last.withLock { previous -> Bool in
            defer { previous = answer }
            return previous != nil && previous != answer
        }
        if changed { printLine("CHANGED\n") }
    }
    printLine("READY\n")
    withExtendedLifetime(observation) { while true { pause() } }
case "reachability" where arguments.count == 3, "reachability-inline" where arguments.count == 3:
    guard let address = IPAddress(arguments[2]) else {
        printLine("latency-listener: not an address literal\n")
        exit(2)
    }
    let queue = arguments[1] == "reachability-inline" ? try ReachabilityMonitor.evaluationQueue() : nil
    let monitor = try ReachabilityMonitor(address: address, queue: queue)
    monitor.onChange = { _, _ in printLine("CHANGED\n") }
    monitor.startListening()
    printLine("READY\n")
    withExtendedLifetime(monitor) { while true { pause() } }
default:
    printLine("usage: latency-listener subscription | subscription-hop | subscription-lookup ADDRESS | reachability ADDRESS | reachability-inline ADDRESS\n")
    exit(2)
}
