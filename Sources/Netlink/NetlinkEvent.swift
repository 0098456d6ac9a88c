/// One change that a ``NetlinkSubscription`` reports.
///
/// Every observer first receives ``snapshot(_:)`` with the state at the moment it joined, then
/// every change after that, in the kernel's order.
public enum NetlinkEvent: Sendable, Hashable {
    /// The whole state when the observer joined. Always the first event.
    case snapshot(NetworkState)
    /// A link appeared, changed (name, flags, carrier, operstate, MTU, master...) or went away
    /// (deleted, or moved to another namespace).
    case link(Change<Link>)
    /// An interface address appeared, changed (flags, lifetimes) or went away.
    case address(Change<InterfaceAddress>)
    /// A route of any table appeared, changed or went away.
    case route(RouteChange)
    /// The IP configuration (netconf) of a link or of the namespace appeared, changed or went
    /// away: `ignore_routes_with_linkdown` or forwarding was set, say.
    case configuration(Change<InterfaceConfiguration>)
    /// A neighbour entry appeared, changed state or went away (only when the subscription
    /// follows neighbours: ``SubscriptionOptions/followsNeighbors``).
    case neighbor(Change<Neighbor>)
    /// The policy rules (`ip rule`) of this family changed: route lookups may now answer
    /// differently for any destination. The state's ``NetworkState/policyRules`` hold the new
    /// ones (the subscription reads them again after a rule message).
    case rulesChanged(AddressFamily)
    /// The subscription lost kernel notifications (or hit an error) and re-read the kernel's
    /// state; the differences were reported just before this event, so the observer's view
    /// equals the kernel's again.
    case resynchronized(ResynchronizationReason)
}

/// A change to a value that the subscription keeps: a link, an address, a default route, an IP
/// configuration or a neighbour. It is `Equatable` and `Hashable` when its value is.
public enum Change<Value: Sendable>: Sendable {
    /// The value appeared.
    case new(Value)
    /// The value changed; both versions are given.
    case changed(old: Value, new: Value)
    /// The value went away; this is its last version.
    case removed(Value)

    /// The value after the change (the last version for ``removed(_:)``).
    public var value: Value {
        switch self {
        case .new(let v), .removed(let v), .changed(_, let v): return v
        }
    }
}

extension Change: Equatable where Value: Equatable {}

extension Change: Hashable where Value: Hashable {}

extension RouteChange {
    /// The route form of a change to a kept route.
    init(_ change: Change<Route>) {
        switch change {
        case .new(let r): self = .new(r)
        case .changed(let old, let new): self = .changed(old: old, new: new)
        case .removed(let r): self = .removed(r)
        }
    }
}

/// Stores `value` under `key` and says what that changed: nil when an equal value was there.
func upsert<Key: Hashable, Value: Equatable>(_ value: Value, at key: Key, in dictionary: inout [Key: Value]) -> Change<Value>? {
    guard let old = dictionary.updateValue(value, forKey: key) else { return .new(value) }
    return old == value ? nil : .changed(old: old, new: value)
}

/// Makes `dictionary` hold `current` where it held `previous` (a part of it), and tells `emit`
/// the changes: removals first, then additions and updates.
func replace<Key: Hashable, Value: Equatable>(_ previous: [Key: Value], with current: [Key: Value],
                                   in dictionary: inout [Key: Value], _ emit: (Change<Value>) -> Void) {
    for (key, old) in previous where current[key] == nil {
        dictionary[key] = nil
        emit(.removed(old))
    }
    for (key, value) in current {
        if let change = upsert(value, at: key, in: &dictionary) { emit(change) }
    }
}

/// A change to a route.
///
/// The subscription keeps the default routes only, with the halves of the address space (a full
/// table can hold a million routes), so it knows the previous version of those but not of any
/// other.
public enum RouteChange: Sendable, Hashable {
    /// A route appeared.
    case new(Route)
    /// A default route was replaced or updated; both versions are given.
    case changed(old: Route, new: Route)
    /// A route that the subscription does not keep was replaced (`ip route replace`, or
    /// `NLM_F_REPLACE`); this is the new version.
    case replaced(Route)
    /// A route went away: deleted with a message, or, for a default route, also flushed by the
    /// kernel without one (its link went down or away, its source address went): the
    /// subscription re-reads the default routes it keeps and reports those. Other routes that
    /// the kernel flushes silently (an IPv4 link's prefix and broadcast routes when it goes
    /// down, routes through it) are not reported: the subscription does not keep them, and only
    /// a dump of the table would tell.
    case removed(Route)

    /// The route after the change (the last version for ``removed(_:)``).
    public var route: Route {
        switch self {
        case .new(let r), .replaced(let r), .removed(let r), .changed(_, let r): return r
        }
    }
}

/// Why a subscription re-read the kernel's state.
public enum ResynchronizationReason: Sendable, Hashable, CustomStringConvertible {
    /// The socket's receive buffer overflowed (`ENOBUFS`): the kernel dropped notifications.
    case overflow
    /// Reading notifications failed with this error.
    case error(NetlinkError)

    public var description: String {
        switch self {
        case .overflow: return "overflow"
        case .error(let e): return "error: \(e)"
        }
    }
}
