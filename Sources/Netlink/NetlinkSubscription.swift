import Dispatch

/// A live view of one network namespace: its links, addresses and default routes, kept current
/// from kernel notifications, and every change as an event.
///
/// One subscription (one socket, one thread) serves every observer in the process for a
/// namespace: use ``shared(namespace:options:)``. Observe with a closure on a queue of your choice, or
/// with `for try await`:
///
/// ```swift
/// let subscription = try NetlinkSubscription.shared()
/// for try await event in subscription.events() {
///     if case .link(.changed(let old, let new)) = event, old.isRunning != new.isRunning {
///         print("\(new.name) is \(new.isRunning ? "running" : "not running")")
///     }
/// }
/// ```
///
/// Every observer receives ``NetlinkEvent/snapshot(_:)`` first, then each change. When the kernel
/// drops notifications (a full receive buffer), the subscription re-reads the kernel's state,
/// reports the differences and ``NetlinkEvent/resynchronized(_:)``; it does not end. It ends only
/// when its namespace is deleted (``NetlinkError/namespaceDeleted``) or it is released.
///
/// When the process calls `exit`, every running subscription is ended first, before libnl's own
/// teardown, which would otherwise abort the process if a subscription's thread still used
/// libnl; the exit waits for that up to a second. Its observers are not told (the network did
/// not change: a monitor would report "not reachable" on its way out), and from then on no
/// subscription opens (the initializer throws `ESHUTDOWN`).
public final class NetlinkSubscription: Sendable {
    /// The namespace this subscription watches.
    public let namespace: NetworkNamespace
    /// The options it was opened with.
    public let options: SubscriptionOptions
    let publisher: Publisher
    private let engine: SubscriptionEngine

    /// Opens a subscription of its own (not shared) in `namespace`, and returns once the
    /// initial state has been read. Prefer ``shared(namespace:options:)``, so that the process
    /// keeps one socket and one thread per namespace, unless this subscription must have options
    /// of its own while the shared one runs with others.
    ///
    /// - Throws: ``NetlinkError`` when the namespace cannot be entered or the kernel refuses.
    public init(namespace: NetworkNamespace = .current, options: SubscriptionOptions = .init()) throws(NetlinkError) {
        self.namespace = namespace
        self.options = options
        let publisher = Publisher()
        self.publisher = publisher
        engine = try SubscriptionEngine.start(namespace: namespace, options: options, publisher: publisher)
    }

    deinit { engine.stop() }

    /// Notes that an observer on this subscription's thread waits for blocks of `queue`
    /// (`queue.sync`, inside ``whileObserverWaits(for:_:)``), so that the process's exit from
    /// such a block does not wait for this subscription's loop while it waits for that very
    /// queue, whose block then never ends (see `ExitCoordinator`).
    package func noteObserversWait(for queue: DispatchQueue) {
        queue.setSpecific(key: ExitCoordinator.queueWaitedForByObservers,
                          value: ExitCoordinator.WaitedQueue(loop: ObjectIdentifier(engine), queue: Self.identity(of: queue)))
    }

    /// Runs `body`, in which an observer on this subscription's thread waits for a block of
    /// `queue`, a queue given to ``noteObserversWait(for:)``.
    package func whileObserverWaits<T>(for queue: DispatchQueue, _ body: () -> T) -> T {
        engine.whileObserverWaits(for: Self.identity(of: queue), body)
    }

    private static func identity(of queue: DispatchQueue) -> UInt { UInt(bitPattern: ObjectIdentifier(queue)) }

    private static let registry = Locked<[NetworkNamespace.Identity: Weak<NetlinkSubscription>]>([:])

    /// The process-wide subscription for `namespace`, opened on first use and kept while anyone
    /// holds it or observes it.
    ///
    /// - Parameters:
    ///   - namespace: The network namespace to watch (default: the current one).
    ///   - options: Used only when this call opens the subscription; a subscription that is
    ///     already open is returned with the options it was opened with (see ``options``). To
    ///     give the monitors of a program a smaller or larger receive buffer, call this first.
    public static func shared(namespace: NetworkNamespace = .current,
                              options: SubscriptionOptions = .init()) throws(NetlinkError) -> NetlinkSubscription {
        let identity = try namespace.identity()
        // Every subscription the registry's weak references yield is held here until the lock
        // is released: one whose last other reference goes meanwhile must not deinitialize (stop
        // and join its thread) under the registry's lock.
        var held: [NetlinkSubscription] = []
        let subscription = try registry.withLock { (entries) throws(NetlinkError) -> NetlinkSubscription in
            held = entries.values.compactMap(\.value)
            if let existing = entries[identity]?.value, existing.publisher.termination == nil {
                return existing
            }
            entries = entries.filter { $0.value.value != nil }
            let created = try NetlinkSubscription(namespace: namespace, options: options)
            entries[identity] = Weak(created)
            return created
        }
        withExtendedLifetime(held) {}
        return subscription
    }

    /// The current links, addresses and default routes.
    ///
    /// It may be ahead of what observers and sequences have seen: the subscription's thread
    /// makes a batch's state current, then hands the batch to each of them, and only then makes
    /// the next batch's state current. So it is at most one batch ahead of what has been handed
    /// over; an observer on a queue, or a sequence's consumer, may still be working through
    /// older batches.
    public var state: NetworkState { publisher.state }

    /// ``state`` and whether it is settled, read together: `false` between a batch after which
    /// the subscription re-reads what the kernel changed without a message and the batch that
    /// ends that re-read (see
    /// ``observeSettledBatchesOnSubscriptionThread(onTermination:_:)``).
    package var settledState: (state: NetworkState, isSettled: Bool) { publisher.settledState }

    /// How many times the subscription has re-read the kernel's state after lost notifications.
    public var resynchronizationCount: Int { publisher.resynchronizationCount }

    /// Why the subscription ended, or nil while it runs.
    public var termination: NetlinkError? { publisher.termination }

    /// Calls `handler` with every event, in order, on `queue` (a private serial queue by default;
    /// a concurrent queue is used through a serial one that targets it).
    ///
    /// The first call carries ``NetlinkEvent/snapshot(_:)``. Keep the returned observation: when
    /// it is released or cancelled, delivery stops, and once `cancel()` has returned no callback
    /// runs (unless `cancel()` was called from inside one).
    ///
    /// - Parameters:
    ///   - queue: Where `handler` runs (a private serial queue by default).
    ///   - onTermination: Called once if the subscription ends (the namespace was deleted).
    ///   - handler: Called with each event.
    public func observe(on queue: DispatchQueue? = nil,
                        onTermination: (@Sendable (NetlinkError) -> Void)? = nil,
                        _ handler: @escaping @Sendable (NetlinkEvent) -> Void) -> NetlinkObservation {
        let serial = DispatchQueue(label: "Netlink.observer", target: queue)
        let observer = CallbackObserver(queue: serial, handler: handler, onTermination: onTermination)
        publisher.attach(observer)
        return NetlinkObservation(subscription: self, observer: observer)
    }

    /// Calls `handler` with every event, in order, on the subscription's own thread, right after
    /// the kernel's messages of one read are parsed: no queue hop, the lowest latency there is.
    ///
    /// The first call carries ``NetlinkEvent/snapshot(_:)``. `handler` must return quickly and
    /// must not block: while it runs, the subscription reads nothing, and if the kernel's
    /// buffer fills meanwhile, the subscription re-reads the state and reports
    /// ``NetlinkEvent/resynchronized(_:)``. It may read ``state`` and cancel its own
    /// observation; it must not wait for anything that needs this subscription's thread.
    /// Cancellation works as with ``observe(on:onTermination:_:)``.
    ///
    /// - Parameters:
    ///   - onTermination: Called once if the subscription ends (the namespace was deleted).
    ///   - handler: Called with each event.
    public func observeOnSubscriptionThread(onTermination: (@Sendable (NetlinkError) -> Void)? = nil,
                                            _ handler: @escaping @Sendable (NetlinkEvent) -> Void) -> NetlinkObservation {
        let observer = CallbackObserver(queue: nil, handler: handler, onTermination: onTermination)
        publisher.attach(observer)
        return NetlinkObservation(subscription: self, observer: observer)
    }

    /// Calls `handler` on the subscription's own thread with the events of each batch the
    /// subscription publishes, in one call: the first change after a wake-up on its own (so that
    /// it is not held back), then the rest of that wake-up's reads together.
    ///
    /// For consumers that do per-batch work once rather than per event: write their output with
    /// one system call, take one lock, or judge a burst as a whole. The rules of
    /// ``observeOnSubscriptionThread(onTermination:_:)`` apply: the first call carries
    /// ``NetlinkEvent/snapshot(_:)`` alone, `handler` must return quickly and must not block, and
    /// cancellation works the same way. ``state`` read inside `handler` already includes the
    /// whole batch.
    ///
    /// - Parameters:
    ///   - onTermination: Called once if the subscription ends (the namespace was deleted).
    ///   - handler: Called with each batch, never with an empty one.
    package func observeBatchesOnSubscriptionThread(onTermination: (@Sendable (NetlinkError) -> Void)? = nil,
                                                   _ handler: @escaping @Sendable ([NetlinkEvent]) -> Void) -> NetlinkObservation {
        let observer = CallbackObserver(queue: nil, batchHandler: handler, onTermination: onTermination)
        publisher.attach(observer)
        return NetlinkObservation(subscription: self, observer: observer)
    }

    /// Calls `handler` on the subscription's own thread with each batch, as
    /// ``observeBatchesOnSubscriptionThread(onTermination:_:)`` does, and with whether the
    /// state is settled.
    ///
    /// The kernel changes some state without a message: it flushes the IPv4 routes of a link
    /// that goes down, flags a link's routes `linkdown` (or dead) when its carrier goes, flushes
    /// next-hop objects. After a batch that may hide such a change, the subscription re-reads
    /// what it touches, on this thread, before it reads anything else. Such a batch comes with
    /// `isSettled` false; the one that ends the re-read with `isSettled` true, and with no
    /// events when the re-read found no change. A consumer that judges the state as a whole
    /// (which default route carries the internet) waits for the settled batch, and so never
    /// judges the moment in between, when a link's carrier is gone but its routes are not yet
    /// marked; one that reacts to what the kernel said goes on at once. The other rules of
    /// ``observeOnSubscriptionThread(onTermination:_:)`` apply; the first call carries
    /// ``NetlinkEvent/snapshot(_:)`` alone, settled unless the observer was attached while a
    /// re-read runs (the settled call that ends it follows).
    ///
    /// - Parameters:
    ///   - onTermination: Called once if the subscription ends (the namespace was deleted).
    ///   - handler: Called with each batch and whether the state is settled.
    package func observeSettledBatchesOnSubscriptionThread(
        onTermination: (@Sendable (NetlinkError) -> Void)? = nil,
        _ handler: @escaping @Sendable (_ events: [NetlinkEvent], _ isSettled: Bool) -> Void
    ) -> NetlinkObservation {
        let observer = CallbackObserver(settledBatchHandler: handler, onTermination: onTermination)
        publisher.attach(observer)
        return NetlinkObservation(subscription: self, observer: observer)
    }

    /// Every event as an asynchronous sequence, starting with ``NetlinkEvent/snapshot(_:)``.
    /// The sequence keeps the subscription alive while it is iterated; it ends by throwing the
    /// ``NetlinkError`` that ended the subscription.
    ///
    /// A consumer that falls behind (it sleeps through a storm) is not buffered without end:
    /// once about `bufferLimit` events wait, the sequence drops the kernel's later batches and
    /// keeps only the state they lead to; when the consumer has taken most of what waits, it
    /// gets the differences between the state its events reached and the current one
    /// (``NetworkState/changes(since:)``), then ``NetlinkEvent/resynchronized(_:)`` with
    /// ``ResynchronizationReason/overflow``, as after the kernel's own overflow. Route changes
    /// outside the default routes, which the state does not hold, are lost with the batches.
    /// - Parameter bufferLimit: How many events may wait (default 10 000, some 5 MB). A batch
    ///   that arrives while fewer than half of them wait is never dropped: until then the
    ///   sequence keeps no state to tell the differences from (keeping one would make the
    ///   subscription copy its state at its next change, for consumers that keep up too). So up
    ///   to half the limit plus one batch (one read of the kernel's socket, at most its receive
    ///   buffer's worth) may wait.
    public func events(bufferLimit: Int = 10_000) -> NetlinkEventStream {
        let (stream, continuation) = AsyncThrowingStream<NetlinkEvent, any Error>.makeStream()
        let sink = StreamObserver(continuation: continuation, limit: bufferLimit)
        continuation.onTermination = { [self] _ in publisher.detach(sink) }
        publisher.attach(sink)
        return NetlinkEventStream(base: stream, sink: sink)
    }
}

/// A registered closure observer of a ``NetlinkSubscription``. Cancel it, or release it, to stop.
public final class NetlinkObservation: Sendable {
    /// The subscription and the observer, until ``cancel()``: then the observation lets go of
    /// both, so that a handler that holds its own observation (to cancel it from inside) does not
    /// keep the observer, the handler, the observation and the subscription alive in a cycle.
    private let registration: Locked<(subscription: NetlinkSubscription, observer: CallbackObserver)?>

    init(subscription: NetlinkSubscription, observer: CallbackObserver) {
        registration = Locked((subscription, observer))
    }

    /// Stops delivery. When it returns, no callback is running (unless called from one) and none
    /// will start: it waits for a running callback, so never call it from a thread that the
    /// callback waits for. Calling it again does nothing.
    public func cancel() {
        let taken = registration.withLock { registration in
            defer { registration = nil }
            return registration
        }
        guard let (subscription, observer) = taken else { return }
        subscription.publisher.detach(observer)
        observer.cancel()
    }

    deinit { cancel() }
}

/// The events of a ``NetlinkSubscription`` as an `AsyncSequence` that throws ``NetlinkError``.
public struct NetlinkEventStream: AsyncSequence, Sendable {
    public typealias Element = NetlinkEvent
    public typealias Failure = NetlinkError

    let base: AsyncThrowingStream<NetlinkEvent, any Error>
    let sink: StreamObserver

    public func makeAsyncIterator() -> Iterator { Iterator(base: base.makeAsyncIterator(), sink: sink) }

    /// The iterator of a ``NetlinkEventStream``.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<NetlinkEvent, any Error>.AsyncIterator
        let sink: StreamObserver

        public mutating func next() async throws(NetlinkError) -> NetlinkEvent? {
            do { return taken(try await base.next()) } catch { throw (error as? NetlinkError) ?? .failure }
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(NetlinkError) -> NetlinkEvent? {
            do { return taken(try await base.next(isolation: actor)) } catch { throw (error as? NetlinkError) ?? .failure }
        }

        private func taken(_ event: NetlinkEvent?) -> NetlinkEvent? {
            if event != nil { sink.taken() }
            return event
        }
    }
}
