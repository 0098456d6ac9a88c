import Foundation
import Netlink
import NetnsTestSupport
import Testing

/// Expects that what a subscription built from notifications (`mine`) comes to equal a fresh
/// libnl dump of the same namespace (`truth`), waiting a bounded time for the notifications to
/// arrive. When they never agree, the issue names the first entries that differ and, for entries
/// on both sides, the fields that differ, by name.
func expectAgreement<Key: Hashable, Value: Equatable>(
    after step: String, mine: () -> [Key: Value], truth: () throws -> [Key: Value],
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var last = ""
    let same = eventually {
        guard let truth = try? truth() else { return false }
        let mine = mine()
        if mine == truth { return true }
        let differing = Set(mine.keys).union(truth.keys).filter { mine[$0] != truth[$0] }
        last = differing.prefix(2).map { key in
            guard let a = mine[key], let b = truth[key] else {
                return "\(key): \(String(describing: mine[key])) ≠ \(String(describing: truth[key]))"
            }
            let fields = zip(Mirror(reflecting: a).children, Mirror(reflecting: b).children)
                .filter { String(describing: $0.value) != String(describing: $1.value) }
                .map { "\($0.label ?? "?"): \($0.value) ≠ \($1.value)" }
            return "\(key): " + fields.joined(separator: ", ")
        }.joined(separator: "; ")
        return false
    }
    #expect(same, "after \(step): \(last)", sourceLocation: sourceLocation)
}

/// A tour of a parser: subscribes to `ns`, then expects agreement (`expectAgreement`) between
/// `view` of the subscription's state and `view` of a fresh libnl dump, at the start and after
/// each step's `ip -batch` commands.
/// - Returns: The subscription, for checks after the tour.
@discardableResult
func expectAgreementThroughTour<Key: Hashable, Value: Equatable>(
    in ns: TestNamespace, steps: [(String, [String])], view: (NetworkState) -> [Key: Value],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> NetlinkSubscription {
    let namespace = try NetworkNamespace.named(ns.name)
    let subscription = try NetlinkSubscription(namespace: namespace)
    let kernel = try NetlinkConnection(namespace: namespace)
    func agree(_ step: String) {
        expectAgreement(after: step, mine: { view(subscription.state) }, truth: { view(try kernel.snapshot()) },
                        sourceLocation: sourceLocation)
    }
    agree("start")
    for (step, commands) in steps {
        try ns.batch(commands)
        agree(step)
    }
    return subscription
}
