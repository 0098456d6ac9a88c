#if CommandLineTool
import Dispatch
import Netlink
import LinuxReachability

/// What `reach wait` waits for, as conditions that monitors report on: the wait is over when
/// all of them hold at once.
final class WaitConditions: Sendable {
    private let outcome: EndOfMonitoring
    /// Whether each condition holds; nil until it is first reported.
    private let met = Locked<[Bool?]>([])
    /// Signalled once per condition, at its first report.
    private let firstReports = DispatchSemaphore(value: 0)
    private let count: Int

    /// Conditions that wake `outcome`'s waiter; `count` of them will be added.
    init(outcome: EndOfMonitoring, count: Int) {
        self.outcome = outcome
        self.count = count
    }

    /// Adds a condition, not reported yet, and returns its index.
    func add() -> Int {
        met.withLock { met in
            met.append(nil)
            return met.count - 1
        }
    }

    /// Reports whether condition `index` holds; `answer`, when given, ends the wait if it says
    /// monitoring ended (the namespace was deleted).
    func set(_ index: Int, _ holds: Bool, answer: ReachabilityAnswer? = nil) {
        if let answer, case .monitoringEnded(let error) = answer.reason { end(error) }
        let (first, all) = met.withLock { met -> (Bool, Bool) in
            let first = met[index] == nil
            met[index] = holds
            return (first, met.count == count && met.allSatisfy { $0 == true })
        }
        if all { outcome.finish(.reached) }
        if first { firstReports.signal() }
    }

    /// Ends the wait: the namespace went away. A wait for first reports ends too, as a
    /// condition that ends may never have been reported.
    func end(_ error: NetlinkError) {
        outcome.finish(.ended(error))
        for _ in 0..<count { firstReports.signal() }
    }

    /// Whether condition `index` was reported.
    func isReported(_ index: Int) -> Bool { met.withLock { $0[index] != nil } }

    /// Waits until every condition was reported once (each monitor reports at once when it
    /// starts, a probe once it is done), until one ended the wait, or until `deadline`.
    func waitForFirstReports(until deadline: DispatchTime) {
        for _ in 0..<count where firstReports.wait(timeout: deadline) == .timedOut { return }
    }
}

/// When links are usable for `reach wait --interface` (systemd-networkd-wait-online's
/// "routable"): up, with carrier, in operational state up (or unknown, as virtual links
/// report), and with an address the link can be reached at beyond itself.
struct LinkReadiness: Sendable {
    /// The links, by name or alternative name; empty means every link but loopback.
    var names: [String]
    /// Whether every named link must be usable (else one is enough).
    var requiresAll: Bool
    /// The address families a usable link needs an address of (empty: either).
    var families: Set<AddressFamily>

    /// Whether `state` has the links usable.
    func isMet(by state: NetworkState) -> Bool {
        let usable = { (link: Link) in Self.isUsable(link, addresses: state.addresses(ofLink: link.index), families: families) }
        if names.isEmpty {
            return state.links.values.contains { !$0.flags.contains(.loopback) && usable($0) }
        }
        let results = names.map { name in state.link(named: name).map(usable) ?? false }
        return requiresAll ? results.allSatisfy { $0 } : results.contains(true)
    }

    /// Whether `link`, with `addresses`, is usable: up, with carrier, operationally up (or
    /// unknown), and with an IPv4 address or a global IPv6 one that is not tentative or failed
    /// (of `families`, when given).
    static func isUsable(_ link: Link, addresses: some Sequence<InterfaceAddress>, families: Set<AddressFamily>) -> Bool {
        guard link.isUp, link.isRunning, link.carrier != false, link.operState == .up || link.operState == .unknown else { return false }
        let usableFamilies = Set(addresses.compactMap { address -> AddressFamily? in
            switch address.family {
            case .ipv4:
                return address.scope != .host ? .ipv4 : nil
            case .ipv6:
                return address.isSettledGlobalIPv6 ? .ipv6 : nil
            }
        })
        return families.isEmpty ? !usableFamilies.isEmpty : families.isSubset(of: usableFamilies)
    }
}
#endif
