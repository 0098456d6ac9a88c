import Netlink
import NetnsTestSupport
import Synchronization

/// Collects the events of a subscription for a test to inspect.
final class EventRecorder: Sendable {
    let events = Locked<[NetlinkEvent]>([])
    let ended = Locked<NetlinkError?>(nil)
    private let observation = Locked<NetlinkObservation?>(nil)

    init(_ subscription: NetlinkSubscription) {
        let token = subscription.observe(onTermination: { [weak self] error in self?.ended.withLock { $0 = error } }) { [weak self] event in
            self?.events.withLock { $0.append(event) }
        }
        observation.withLock { $0 = token }
    }

    var all: [NetlinkEvent] { events.withLock { $0 } }

    /// Waits (bounded, for liveness only) until an event matches.
    func waitFor(_ what: String = "", _ predicate: (NetlinkEvent) -> Bool) -> Bool {
        eventually { events.withLock { $0.contains(where: predicate) } }
    }

    func cancel() { observation.withLock { $0?.cancel() } }
}

extension NetlinkEvent {
    var linkChange: Change<Link>? { if case .link(let c) = self { return c } else { return nil } }
    var addressChange: Change<InterfaceAddress>? { if case .address(let c) = self { return c } else { return nil } }
    var routeChange: RouteChange? { if case .route(let c) = self { return c } else { return nil } }
}

extension NetlinkEvent {
    var configurationChange: Change<InterfaceConfiguration>? { if case .configuration(let c) = self { return c } else { return nil } }
    var neighborChange: Change<Neighbor>? { if case .neighbor(let c) = self { return c } else { return nil } }
}
