import Dispatch
import Logging
import Netlink

/// The evaluation loop of one namespace, shared by every monitor in the process that watches it.
///
/// It observes the namespace's one ``NetlinkSubscription`` on a private serial queue. After each
/// batch of kernel events (one netlink read) it reclassifies links if they changed and
/// evaluates every watched target once, however many monitors watch it, and tells each
/// watcher only when the answer really changed. Host names are resolved off the queue and
/// re-resolved when addresses or default routes change; until the first resolution finishes
/// a host is answered optimistically from the default routes, as Apple does.
final class ReachabilityEngine: Sendable {
    /// Receives answers on the engine's queue, with the round's batch of deliveries to add its
    /// callbacks to.
    typealias Watcher = @Sendable (ReachabilityAnswer, DeliveryBatch) -> Void
    /// Receives each evaluation round's snapshot on the engine's queue.
    typealias RoundObserver = @Sendable (Snapshot) -> Void

    final class Token: Sendable {
        let id: UInt64
        let target: ReachabilityTarget
        /// Whether the watcher's callbacks run inside the round (see ``watch(_:inline:_:)``).
        let inline: Bool
        init(id: UInt64, target: ReachabilityTarget, inline: Bool = false) {
            self.id = id
            self.target = target
            self.inline = inline
        }
    }

    /// What the engine keeps for one target. A class, so that reading or updating one entry
    /// of 10 000 in an evaluation round touches that entry only (a struct would be copied out
    /// of the dictionary, its watchers with it). Only used with ``state`` locked.
    private final class Entry {
        /// Which entry this is, unique in the engine: a target dropped when its last watcher
        /// leaves and watched again gets a new entry, whose resolutions are counted from zero
        /// again, so a result must name the entry that started it (see `resolve(_:)`).
        let serial: UInt64
        init(serial: UInt64) { self.serial = serial }
        var answer: ReachabilityAnswer?
        /// Whether `answer` is a host's optimistic one, judged with no addresses known while
        /// the subscription ran.
        var judgedWithoutAddresses = false
        var addresses: [ResolvedAddress]?
        /// Why the last resolution gave no addresses, when it failed or timed out.
        var resolutionFailure: ReachabilityError?
        /// Resolutions started for this entry, and the newest one whose result was applied.
        var resolutionGeneration = 0
        var appliedResolution = 0
        /// Whether a resolution of this entry's name runs, and whether another was asked for
        /// meanwhile: it starts when the running one ends, one for any number of requests.
        var resolving = false
        var resolutionPending = false
        /// Watchers, and whether each has had its first answer (only those get changes).
        var watchers: [UInt64: Watching] = [:]
        /// How many of them wait for the host name's first resolution (``WatchPhase/waiting``).
        var waitingWatchers = 0
        /// The FIB entry an address target matched, valid while `matchedGeneration` is the
        /// engine's ``State/matchGeneration`` (see SharedLookups.swift).
        var matched: MatchedEntry?
        var matchedGeneration = -1
    }

    /// What a new watch does next with the answer at hand (see ``watch(_:inline:_:)``).
    private enum FirstAnswerStep {
        /// Nothing now: the watch ended, or it waits for the host's first resolution.
        case drop
        /// Judge the host again: the answer at hand is optimistic, and addresses are known or
        /// the subscription ended since.
        case judgeAgain
        /// Tell the watcher the answer at hand; it is ready.
        case tell
    }

    /// Where a watch is on its way to its first answer.
    private enum WatchPhase {
        /// Registered; its first answer is on its way from ``watch(_:inline:_:)``.
        case registered
        /// Its target is a host name never resolved yet: the first answer waits for the
        /// resolution (or the end of the subscription), as FXReachability's and Apple's scheduled
        /// answers do; an optimistic guess from the default routes is for queries only.
        case waiting
        /// Had its first answer; gets every change.
        case ready
    }

    /// One watch of a target: its callback, and whether it has had its first answer.
    ///
    /// A struct rather than a tuple, here and in ``PendingDelivery``: a closure kept in a
    /// tuple inside a dictionary or an array is stored in its most general form, so each
    /// store and each read wraps it in a reabstraction thunk, one allocation each. For 10 000
    /// monitors told of one change that was two allocations per monitor.
    private struct Watching {
        let watcher: Watcher
        var phase: WatchPhase
        var ready: Bool { phase == .ready }
    }

    /// An answer for a watcher, gathered under the lock and delivered after it.
    private struct PendingDelivery {
        let watcher: Watcher
        let answer: ReachabilityAnswer
    }

    /// A host name's latest resolution: its addresses, whether the network changed since, and
    /// why it gave none, if it failed.
    private typealias ResolvedHost = (addresses: [ResolvedAddress], stale: Bool, failure: ReachabilityError?)

    private struct State {
        /// The watched targets, walked in the order they were first watched (see
        /// ``InsertionOrderedTable``).
        var entries = InsertionOrderedTable<ReachabilityTarget, Entry>()
        var nextID: UInt64 = 1
        /// A round will pick up the changes noted so far: one is queued, or one is running and
        /// will queue the next when it ends.
        var evaluationScheduled = false
        /// A round is running. Changes noted meanwhile queue the next round when it ends, after
        /// its deliveries: a callback queue that targets the engine's queue then runs a round's
        /// callbacks before the next round is evaluated, so callbacks keep the rounds' order.
        var roundRunning = false
        /// Watchers whose callbacks run inside the round: while there are some, a round that
        /// kernel events start runs on the subscription's thread (see `received(_:settled:)`).
        var inlineWatchers = 0
        /// Changes were noted from a batch that was not settled: the settled one starts the
        /// round (see `received(_:settled:)`).
        var roundWaitsForSettledState = false
        /// How many watched targets are host names.
        var hostEntries = 0
        /// Whether a round judges the default routes: the internet, a host name (until it
        /// resolves, and its re-resolutions) or a path monitor is watched. Such a round waits for
        /// a settled state (see `received(_:settled:)`).
        var judgesDefaultRoutes: Bool { entries[.internet] != nil || hostEntries > 0 || !roundObservers.isEmpty }
        var networkChangedForHosts = false
        /// How many changes made the resolved host names stale: a resolution that saw another
        /// count when it started than when it ended is kept as stale (see `resolvedHosts`).
        var hostNetworkChanges = 0
        /// What changed since the last round: the destinations of changed routes, or
        /// everything (a link, an address, a resynchronization, or too many routes to list).
        var changedNetworks: [IPNetwork] = []
        var everythingChanged = true
        /// The families whose interface addresses changed since the last round: they change
        /// the kernel's answers (preferred sources, local routes) for that family only.
        var addressesChanged = AddressFamilies()
        /// The tables whose default routes changed since the last round, and whether any other
        /// route did: a round whose changes are one table's default routes may share lookups.
        var changedDefaultTables = ChangedDefaultTables.none
        var otherRouteChanged = false
        /// Matched entries of an older generation are not trusted; a round that may change them
        /// without learning them again starts a new generation.
        var matchGeneration = 0
        /// The policy rules' fingerprint per family when the matched entries were learned.
        var matchedRules: [AddressFamily: Int] = [:]
        var observation: NetlinkObservation?
        var evaluations = 0
        /// Lookups saved by sharing one answer with a group (for tests).
        var sharedLookups = 0
        /// The latest addresses of every host name resolved here, watched or only queried, and
        /// whether the network changed since (then the next query resolves again).
        var resolvedHosts: [String: ResolvedHost] = [:]
        /// Host names being resolved for a query (not for a watch).
        var queriedHosts: Set<String> = []
        /// Called after every evaluation round with its snapshot (path monitors).
        var roundObservers: [UInt64: RoundObserver] = [:]
        /// Watches the namespace's `resolv.conf` once a path monitor observes the rounds: a new
        /// name server changes a path's DNS support without a kernel message.
        var resolverConfigurationWatch: ResolverConfigurationWatch?
        /// The addresses the watched targets are judged by; nil when it must be built again
        /// (a watch started or ended, a host name resolved).
        var addressIndex: WatchedAddressIndex?
        /// Why the subscription ended (its namespace was deleted), once it has.
        var termination: NetlinkError?

        /// The index, built from the entries when it is out of date.
        mutating func currentAddressIndex() -> WatchedAddressIndex {
            if let addressIndex { return addressIndex }
            var index = WatchedAddressIndex(entries.lazy.flatMap { target, entry -> [IPAddress] in
                switch target {
                case .internet: return []
                case .address(let address): return [address]
                case .addressPair(_, let remote): return [remote]
                case .scopedAddress(let address, _): return [address]
                case .host: return entry.addresses?.map(\.address) ?? []
                }
            })
            index.includesHostNames = hostEntries > 0
            addressIndex = index
            return index
        }
    }

    let namespace: NetworkNamespace
    let queue: DispatchQueue
    let subscription: NetlinkSubscription
    private let connection: NetlinkConnection
    let classifier: LinkClassificationCache
    private let resolver: any HostResolver
    /// How long a resolution may take (see ``BoundedResolution``).
    private let resolutionTimeout: Duration
    /// Where the engine logs (the logger of the monitor that started it).
    let logger: Logger
    private let state = Locked(State())

    private static let registry = Locked<[NetworkNamespace.Identity: Weak<ReachabilityEngine>]>([:])
    private static let queues = Locked<[NetworkNamespace.Identity: Weak<DispatchQueue>]>([:])

    /// The engine of `namespace`, created on first use and kept while a monitor, a stream or a
    /// path monitor holds it: the last one to let go ends it, and with it the namespace's
    /// subscription (its thread and sockets) unless something else observes that.
    ///
    /// An engine whose subscription ended (its namespace was deleted) is not returned: the
    /// kernel reuses namespace inode numbers once a namespace is gone, so a new namespace may
    /// have the identity of a deleted one.
    static func shared(namespace: NetworkNamespace, logger: Logger = ReachabilityMonitor.silentLogger) throws(NetlinkError) -> ReachabilityEngine {
        let identity = try namespace.identity()
        if let engine = live(identity) { return engine }
        let engine = try ReachabilityEngine(namespace: namespace, policy: (try? ConstrainedLinkPolicy.system()) ?? .none,
                                            resolver: SystemHostResolver(namespace: namespace),
                                            queue: evaluationQueue(of: identity, namespace: namespace), logger: logger)
        // Every engine the registry's weak references yield is held until the lock is released:
        // one whose last other reference goes meanwhile must not deinitialize under the lock.
        var held: [ReachabilityEngine] = []
        let chosen = registry.withLock { engines in
            held = engines.values.compactMap(\.value)
            if let existing = engines[identity]?.value, existing.subscription.termination == nil { return existing }
            engines = engines.filter { $0.value.value != nil }
            engines[identity] = Weak(engine)
            return engine
        }
        withExtendedLifetime(held) {}
        if chosen === engine { engine.start() }
        return chosen
    }

    /// The running engine of the namespace `identity`, if one is held.
    private static func live(_ identity: NetworkNamespace.Identity) -> ReachabilityEngine? {
        let engine = registry.withLock { $0[identity]?.value }
        return engine?.subscription.termination == nil ? engine : nil
    }

    /// The serial queue of the shared engines of `namespace` (see `ReachabilityMonitor.evaluationQueue(in:)`):
    /// one queue for as long as anyone holds it, so that a monitor given it meets the engine
    /// that runs on it, however many engines come and go meanwhile.
    static func evaluationQueue(of identity: NetworkNamespace.Identity, namespace: NetworkNamespace) -> DispatchQueue {
        queues.withLock { queues in
            if let queue = queues[identity]?.value { return queue }
            queues = queues.filter { $0.value.value != nil }
            let queue = DispatchQueue(label: "ReachabilityMonitor.engine \(namespace)")
            queues[identity] = Weak(queue)
            return queue
        }
    }

    init(namespace: NetworkNamespace, sysfs: SysfsSource? = nil, policy: ConstrainedLinkPolicy,
         resolver: any HostResolver, resolutionTimeout: Duration = BoundedResolution.defaultTimeout,
         queue: DispatchQueue? = nil, logger: Logger = ReachabilityMonitor.silentLogger) throws(NetlinkError) {
        self.namespace = namespace
        self.queue = queue ?? DispatchQueue(label: "ReachabilityMonitor.engine \(namespace)")
        self.logger = logger
        subscription = try NetlinkSubscription.shared(namespace: namespace, options: SubscriptionOptions(logger: logger))
        connection = try NetlinkConnection(namespace: namespace)
        classifier = LinkClassificationCache(source: sysfs ?? .live(namespace), policy: policy)
        self.resolver = resolver
        self.resolutionTimeout = resolutionTimeout
    }

    /// Ends the observation of the subscription (and, with the last observer, the
    /// subscription's thread) and the resolver configuration's watch on another thread: the
    /// last reference may go inside one of this engine's callbacks, on its queue while the
    /// subscription's thread waits for that queue, where ending the observation would wait for
    /// that very callback.
    deinit {
        let (observation, watch) = state.withLock { ($0.observation, $0.resolverConfigurationWatch) }
        guard observation != nil || watch != nil else { return }
        DispatchQueue.global().async {
            observation?.cancel()
            withExtendedLifetime(watch) {}
        }
    }

    /// Starts following the subscription. Its events are sorted on the subscription's own
    /// thread (a few comparisons each, one lock per batch), so that a route change that cannot
    /// matter to any target costs no wake-up of the evaluation queue.
    func start() {
        logger.debug("monitoring started", metadata: ["namespace": "\(namespace)"])
        weak let engine = self
        // Rounds for inline watchers run from the subscription's observer with `queue.sync`.
        subscription.noteObserversWait(for: queue)
        let observation = subscription.observeSettledBatchesOnSubscriptionThread(onTermination: { error in
            engine?.subscriptionEnded(error)
        }) { events, settled in
            engine?.received(events, settled: settled)
        }
        state.withLock { $0.observation = observation }
    }

    /// Why the subscription ended (its namespace was deleted), or nil while it runs.
    var termination: NetlinkError? { state.withLock { $0.termination } }

    /// The subscription ended: nothing more will be known of the namespace. One last round
    /// tells every watcher `notReachable(.monitoringEnded(error))` and every path observer an
    /// unsatisfied path, instead of leaving them with their last answer and no word.
    private func subscriptionEnded(_ error: NetlinkError) {
        if error.code == NetlinkError.namespaceDeleted.code {
            logger.notice("the namespace went away; its monitors answer not reachable", metadata: ["namespace": "\(namespace)"])
        } else {
            logger.error("monitoring ended", metadata: ["namespace": "\(namespace)", "error": "\(error)"])
        }
        scheduleRound { state in
            state.termination = error
            state.everythingChanged = true
        }
    }

    /// Notes what `change` does to the state and queues a round, unless one is queued or
    /// running (a running round queues the next when it ends).
    private func scheduleRound(_ change: (inout State) -> Void = { _ in }) {
        let schedule = state.withLock { state -> Bool in
            change(&state)
            defer { state.evaluationScheduled = true }
            return !state.evaluationScheduled && !state.roundRunning
        }
        if schedule { queue.async { [self] in evaluateAll() } }
    }

    /// The addresses last resolved for `name` by a watch or a query, if any (for tests).
    func resolvedAddresses(of name: String) -> [ResolvedAddress]? {
        state.withLock { $0.resolvedHosts[name]?.addresses }
    }

    /// How many target evaluations ran (for tests of "one evaluation per target").
    var evaluationCount: Int { state.withLock { $0.evaluations } }

    /// How many kernel lookups were saved by sharing one answer with a group (for tests).
    var sharedLookupCount: Int { state.withLock { $0.sharedLookups } }

    /// How many watches deliver inside the round (for tests).
    var inlineWatcherCount: Int { state.withLock { $0.inlineWatchers } }

    /// How many network changes made resolved host names stale (for tests).
    var hostNetworkChangeCount: Int { state.withLock { $0.hostNetworkChanges } }

    /// How many watches are registered, over all targets (for tests of lifetimes).
    var watcherCount: Int { state.withLock { $0.entries.values.reduce(0) { $0 + $1.watchers.count } } }

    /// Starts watching `target`: `watcher` gets the current answer first (on the engine's
    /// queue), then every real change.
    ///
    /// An `inline` watcher delivers on the engine's queue itself (its callbacks run inside the
    /// round, see ``DeliveryBatch``); while one watches, rounds started by kernel events run on
    /// the subscription's thread, so that a change reaches it with no thread woken.
    func watch(_ target: ReachabilityTarget, inline: Bool = false, _ watcher: @escaping Watcher) -> Token {
        let target = target.judged
        let token = state.withLock { state -> Token in
            let id = state.nextID
            state.nextID += 1
            if inline { state.inlineWatchers += 1 }
            if state.entries[target] == nil, target.isHost { state.hostEntries += 1 }
            let entry = state.entries[target] ?? Entry(serial: state.nextID)
            state.nextID += 1
            let token = Token(id: id, target: target, inline: inline)
            entry.watchers[token.id] = Watching(watcher: watcher, phase: .registered)
            state.entries[target] = entry
            state.addressIndex = nil
            return token
        }
        // On the serial queue nothing evaluates between reading the answer and marking the
        // watcher ready, so it gets the current answer once and then exactly the later changes.
        // A host name that was never resolved has no answer to tell yet: the watcher waits, and
        // the round that applies the first resolution tells it (`evaluateAndStore`). A query's
        // resolution, though, lands off the queue: when one is known and the answer at hand was
        // judged without it (optimistic, from the default routes: kept from before it, or
        // judged while it landed), the host is judged again from its addresses, which also
        // tells the watchers waiting for them. So is a host whose subscription ended since its
        // optimistic answer: the watcher hears that it ended.
        queue.async { [self] in
            var answer = state.withLock { $0.entries[target]?.answer } ?? evaluateAndStore(target, in: snapshot())
            while true {
                let step = state.withLock { state -> FirstAnswerStep in
                    guard let entry = state.entries[target], entry.watchers[token.id]?.phase == .registered else { return .drop }
                    if case .host(let name) = target, entry.addresses == nil {
                        if state.resolvedHosts[name] == nil, state.termination == nil {
                            entry.watchers[token.id]!.phase = .waiting
                            entry.waitingWatchers += 1
                            return .drop
                        }
                        // A resolution is known, or the subscription ended since.
                        if entry.judgedWithoutAddresses { return .judgeAgain }
                    }
                    entry.watchers[token.id]!.phase = .ready
                    return .tell
                }
                switch step {
                case .drop:
                    return
                case .judgeAgain:
                    answer = evaluateAndStore(target, in: snapshot())
                case .tell:
                    let batch = DeliveryBatch(inline: queue)
                    watcher(answer, batch)
                    batch.send()
                    return
                }
            }
        }
        return token
    }

    /// Calls `observer` on the engine's queue with a snapshot now, then after every evaluation
    /// round (one per netlink read), so that it judges the same state the targets were judged
    /// on, without a subscription or a classification pass of its own.
    /// - Returns: The id to pass to ``stopObservingRounds(_:)``.
    func observeRounds(_ observer: @escaping RoundObserver) -> UInt64 {
        let (id, watchResolver) = state.withLock { state -> (UInt64, Bool) in
            defer { state.nextID += 1 }
            state.roundObservers[state.nextID] = observer
            return (state.nextID, state.resolverConfigurationWatch == nil)
        }
        if watchResolver {
            weak let engine = self
            // A new name server: one round, in which the path monitors judge their name servers
            // again (the targets' answers do not depend on them).
            let watch = ResolverConfigurationWatch(namespace: namespace, queue: queue) { engine?.scheduleRound() }
            state.withLock { state in
                if state.resolverConfigurationWatch == nil { state.resolverConfigurationWatch = watch }
            }
        }
        queue.async { [self] in
            if state.withLock({ $0.roundObservers[id] != nil }) { observer(snapshot()) }
        }
        return id
    }

    /// Stops calling a round observer.
    func stopObservingRounds(_ id: UInt64) {
        _ = state.withLock { $0.roundObservers.removeValue(forKey: id) }
    }

    /// Stops a watch; the target is forgotten when nobody watches it.
    func unwatch(_ token: Token) {
        state.withLock { state in
            guard let entry = state.entries[token.target], let removed = entry.watchers.removeValue(forKey: token.id)
            else { return }
            if removed.phase == .waiting { entry.waitingWatchers -= 1 }
            if token.inline { state.inlineWatchers -= 1 }
            if entry.watchers.isEmpty {
                if token.target.isHost { state.hostEntries -= 1 }
                state.entries[token.target] = nil
                state.addressIndex = nil
            }
        }
    }

    /// The answer for `target` now: the kept one if it is watched, else a fresh evaluation.
    /// A host name is answered from its last resolved addresses; one never resolved is answered
    /// optimistically from the default routes while its resolution starts (as Apple's unscheduled
    /// queries do), and one whose network changed since is resolved again in the background.
    func currentAnswer(for target: ReachabilityTarget) -> ReachabilityAnswer {
        let target = target.judged
        if let kept = state.withLock({ $0.entries[target]?.answer }) { return kept }
        var addresses: [ResolvedAddress]?
        var failure: ReachabilityError?
        if case .host(let name) = target {
            let (cached, start) = state.withLock { state -> (ResolvedHost?, Int?) in
                let cached = state.resolvedHosts[name]
                guard cached == nil || cached!.stale, !state.queriedHosts.contains(name) else { return (cached, nil) }
                state.queriedHosts.insert(name)
                return (cached, state.hostNetworkChanges)
            }
            addresses = cached?.addresses
            failure = cached?.failure
            if let start { resolveForQuery(name, startedAfter: start) }
        }
        return evaluate(target, addresses: addresses, resolutionFailure: failure, in: snapshot())
    }

    /// Resolves a queried (unwatched) host name into ``State/resolvedHosts``. `changes` is
    /// ``State/hostNetworkChanges`` when the resolution started: a result from before a network
    /// change is kept as stale, so that the next query resolves the name again.
    private func resolveForQuery(_ name: String, startedAfter changes: Int) {
        let (resolver, timeout) = (self.resolver, resolutionTimeout)
        Task(executorPreference: ResolutionExecutor.shared) { [weak self] in
            let result = await BoundedResolution.resolve(name, with: resolver, timeout: timeout)
            guard let self else { return }
            self.state.withLock { state in
                state.queriedHosts.remove(name)
                state.resolvedHosts[name] = ((try? result.get()) ?? [], state.hostNetworkChanges != changes, result.failure)
            }
            if let failure = result.failure { self.logResolutionFailure(name, failure) }
        }
    }

    // MARK: - On the queue

    /// Beyond this many changed routes in one round, every target is evaluated.
    private static let changedNetworkLimit = 64

    /// Notes what a batch of events changed and starts one evaluation round. Runs on the
    /// subscription's thread: it must stay short and never call out, except to run the round
    /// itself when an inline watcher waits for it.
    ///
    /// The round runs on the engine's queue: queued there (a worker thread is woken for it), or,
    /// while inline watchers listen, run at once from this thread with `queue.sync`, which on an
    /// idle serial queue runs the block on the calling thread. The change then reaches those
    /// watchers with no thread woken: the wake-up costs 40 to 60 µs on the project VM, a third
    /// of the kernel-to-listener floor (BENCHMARKS.md).
    ///
    /// While the internet, a host name or a path monitor is watched, whose answers are judged
    /// from the default routes, a batch that is not `settled` (the subscription is about to
    /// re-read routes the kernel changed without a message, such as the routes of a link that
    /// lost its carrier) starts no round: the settled batch right after it does. Otherwise a
    /// round would judge the link without carrier beside its routes not yet marked dead, and
    /// tell a passing "not reachable" before the fallback route's answer. Address targets are
    /// asked of the kernel, whose answer is already right: their rounds do not wait.
    private func received(_ events: [NetlinkEvent], settled: Bool) {
        // A policy rule or a default route that selects by source makes the internet's answer
        // depend on the addresses a source is chosen from (see `ReachabilityEvaluator.internetRoutes`).
        let internetFollowsAddresses = events.contains { if case .address = $0 { true } else { false } }
            && ReachabilityEvaluator.internetDependsOnAddresses(subscription.state)
        let (schedule, inline) = state.withLock { state -> (Bool, Bool) in
            var noted = state.roundWaitsForSettledState
            for event in events {
                if Self.note(event, in: &state, internetFollowsAddresses: internetFollowsAddresses) { noted = true }
            }
            guard noted else { return (false, false) }
            if !settled, state.judgesDefaultRoutes {
                state.roundWaitsForSettledState = true
                return (false, false)
            }
            state.roundWaitsForSettledState = false
            defer { state.evaluationScheduled = true }
            return (!state.evaluationScheduled && !state.roundRunning, state.inlineWatchers > 0)
        }
        guard schedule else { return }
        if inline {
            subscription.whileObserverWaits(for: queue) { queue.sync { evaluateAll() } }
        } else {
            // Events of one netlink read arrive in one batch; evaluating in the next block
            // evaluates once per read, whatever the number of events.
            queue.async { [self] in evaluateAll() }
        }
    }

    /// Notes what `event` changed for the next round; false when it cannot matter to any
    /// target.
    private static func note(_ event: NetlinkEvent, in state: inout State, internetFollowsAddresses: Bool) -> Bool {
        var networkChanged = false
        var matters = true
        switch event {
        case .route(let change):
            // A route can change the kernel's answer only for destinations inside its prefix.
            // (A changed route keeps its prefix: only kept routes are reported as changed.)
            // A default route, or a half of the address space, is the internet's, and an
            // unresolved host's, answer; any other route matters only when a watched address
            // lies inside it (path monitors judge their name servers on every round, so they
            // see every change).
            let destination = change.route.destination
            if !change.route.isDefaultOrHalf, state.roundObservers.isEmpty,
               !state.currentAddressIndex().containsAddress(in: destination) {
                return false
            }
            if destination.isDefault {
                state.changedDefaultTables.insert(FamilyTable(family: change.route.family, table: change.route.table))
            } else {
                state.otherRouteChanged = true
            }
            // A carrier's mark on a default route is judged, not asked again: the kernel's
            // answers for addresses already had it (see `marksCarrierOnly`).
            if destination.isDefault, Self.marksCarrierOnly(change) {
                matters = state.judgesDefaultRoutes
            } else if !state.everythingChanged {
                state.changedNetworks.append(change.route.destination)
                if state.changedNetworks.count > Self.changedNetworkLimit {
                    state.everythingChanged = true
                    state.changedNetworks.removeAll()
                }
            }
            // Only a new default route (or half) or address means a new network, whose name
            // servers may answer differently: other routes come and go without a new resolution.
            networkChanged = change.route.isDefaultOrHalf
        case .address(let change):
            // An address changes the kernel's answers in its own family only: the local and
            // prefix routes it brings (which come as route events too), and the preferred source
            // of routes through its link. The internet is judged from default routes and links,
            // and from addresses only when a policy rule or a default route selects by source.
            // So the IPv6 link-local address that comes with every link going up costs IPv4
            // address targets no round; host names are resolved again, so they get one.
            let family = change.value.family
            let index = state.currentAddressIndex()
            state.addressesChanged.insert(family)
            networkChanged = true
            matters = !state.roundObservers.isEmpty || index.includesHostNames || index.containsAddress(of: family)
                || (internetFollowsAddresses && state.entries[.internet] != nil)
        case .snapshot, .resynchronized:
            state.everythingChanged = true
            networkChanged = true
        case .link:
            state.everythingChanged = true
        case .rulesChanged:
            // Any address may now be routed by another table: ask the kernel again.
            state.everythingChanged = true
        case .configuration:
            // `ignore_routes_with_linkdown` changes the kernel's lookups at once: ask again.
            state.everythingChanged = true
        case .neighbor:
            // The kernel's route lookups do not depend on neighbour entries.
            matters = false
        }
        if networkChanged {
            state.networkChangedForHosts = true
            state.hostNetworkChanges += 1
            for name in state.resolvedHosts.keys { state.resolvedHosts[name]!.stale = true }
        }
        return matters
    }

    /// Whether `change` only sets or clears the `linkdown` mark of a route (and of its next
    /// hops), as the subscription's re-read reports after a link lost or regained its carrier.
    ///
    /// The kernel marks the routes of such a link while it handles the carrier change
    /// (`fib_sync_down_dev` and `fib_sync_up`, `rt6_sync_down_dev` and `rt6_sync_up`, on
    /// `NETDEV_CHANGE`), before it sends that link's message (`netdev_state_change`), and that
    /// message starts a round in which every address target asks the kernel again. So a lookup
    /// in or after that round already answered with the mark in place, and asking again after
    /// the re-read reports the mark would answer the same: only the targets judged from the
    /// default routes themselves (the internet, host names before they resolve, path monitors)
    /// need a round for it. Any other difference (a `dead` next hop, a new gateway or metric)
    /// is a change that address targets are asked again for.
    static func marksCarrierOnly(_ change: RouteChange) -> Bool {
        guard case .changed(let old, let new) = change, old != new else { return false }
        func unmarked(_ route: Route) -> Route {
            var route = route
            route.flags.remove(.linkDown)
            for index in route.nexthops.indices { route.nexthops[index].flags.remove(.linkDown) }
            return route
        }
        return unmarked(old) == unmarked(new)
    }

    /// One round: the targets that the round's changes can affect are evaluated against one
    /// snapshot, with every kernel lookup they need sent in batches (one datagram carries many
    /// requests), and the round observers see the same snapshot.
    private func evaluateAll() {
        // A round that judges the default routes (the internet, host names, paths) runs on a
        // settled state only: one queued before a carrier change, or started by a host's
        // resolution or the resolver's file, could otherwise judge the moment before the
        // re-read of the link's routes. The state and its settledness are read under the lock
        // that `received(_:settled:)` takes: the settled batch either comes after this and
        // starts the round it waits for, or came before and the state read here is settled.
        //
        // The round begins in the same lock: were `evaluationScheduled` cleared in a second one,
        // a settled batch arriving in between would see a round scheduled and schedule none,
        // and this round would judge the older state it read, with nothing after it until the
        // next kernel event (a monitor of the internet stayed on its fallback route after the
        // uplink's carrier returned).
        let begun = state.withLock { state -> (NetworkState, [ReachabilityTarget], Bool, [(target: ReachabilityTarget, entry: Entry)],
                                               FamilyTable?)? in
            let (network, settled) = subscription.settledState
            if !settled, state.termination == nil, state.judgesDefaultRoutes {
                state.evaluationScheduled = false
                state.roundWaitsForSettledState = true
                return nil
            }
            state.evaluationScheduled = false
            state.roundRunning = true
            defer {
                state.networkChangedForHosts = false
                state.everythingChanged = false
                state.addressesChanged = AddressFamilies()
                state.changedNetworks.removeAll(keepingCapacity: true)
                state.changedDefaultTables = .none
                state.otherRouteChanged = false
            }
            // The host names, resolved again when the network changed.
            let hosts = state.hostEntries > 0 ? state.entries.keys.filter(\.isHost) : []
            // The entries travel with their targets: the round reads and updates them without
            // looking each one up again.
            let affected = state.entries.compactMap { target, entry -> (target: ReachabilityTarget, entry: Entry)? in
                state.everythingChanged
                    || Self.canChange(target, addresses: entry.addresses, after: state.changedNetworks, state.addressesChanged)
                    ? (target, entry) : nil
            }
            let sharedTable = !state.everythingChanged && !state.otherRouteChanged && state.addressesChanged.isEmpty
                ? state.changedDefaultTables.sole : nil
            // Any other round may change what the addresses match without learning it again.
            if sharedTable == nil { state.matchGeneration += 1 }
            return (network, hosts, state.networkChangedForHosts, affected, sharedTable)
        }
        guard let (settledNetwork, hosts, reresolve, affected, sharedTable) = begun else { return }
        let snapshot = snapshot(of: settledNetwork)
        if reresolve, snapshot.ended == nil {
            for host in hosts { resolve(host) }
        }
        // Once the subscription has ended, every answer is known without asking the kernel.
        // A lone address (or nothing) asks the kernel on its own: nothing to batch or share, and
        // no FIB entry to learn (sharing needs two addresses; the round after a second one is
        // watched learns both).
        let lone = affected.count == 0 || affected.count == 1 && !affected[0].target.isHost
        // Addresses answered by a second lookup from the source the kernel picks (a rule or a
        // default route selects by source) share no default route's answer.
        let sharing = ReachabilityEvaluator.internetDependsOnAddresses(snapshot.network) ? nil : sharedTable
        let plan = snapshot.ended == nil && !lone ? prefetchLookups(for: affected, sharedTable: sharing)
            : LookupPlan(individual: affected.map(\.target))
        let batch = DeliveryBatch(inline: queue)
        if let shared = plan.shared { evaluateAndStoreShared(shared.answer, for: shared.members, in: snapshot, batch: batch) }
        for target in plan.individual { evaluateAndStore(target, in: snapshot, lookups: plan.results, batch: batch) }
        batch.send()
        for observer in state.withLock({ Array($0.roundObservers.values) }) { observer(snapshot) }
        // Changes noted during this round get the next one, queued behind this round's
        // deliveries (see `State.roundRunning`).
        let again = state.withLock { state in
            state.roundRunning = false
            return state.evaluationScheduled
        }
        if again { queue.async { [self] in evaluateAll() } }
    }

    /// Whether routes to `changed` destinations, and interface addresses of the families in
    /// `addressFamilies`, can change the answer for `target`. The internet, and a host not yet
    /// resolved, are judged from the default routes and always re-judged (no kernel lookup); an
    /// address only when a changed prefix contains it or an address of its family changed.
    private static func canChange(_ target: ReachabilityTarget, addresses: [ResolvedAddress]?, after changed: [IPNetwork],
                                  _ addressFamilies: AddressFamilies) -> Bool {
        func affected(_ address: IPAddress) -> Bool {
            addressFamilies.contains(address.family) || changed.contains { $0.contains(address) }
        }
        switch target {
        case .internet: return true
        case .address(let address): return affected(address)
        case .addressPair(_, let remote), .scopedAddress(let remote, _): return affected(remote)
        case .host:
            guard let addresses else { return true }
            return addresses.contains { affected($0.address) }
        }
    }

    /// The kernel's route for every address that `targets` need, asked in batches; nil if the
    /// batch failed (each target then asks on its own and reports its own error).
    ///
    /// In a round where only the default routes of `sharedTable` changed, the addresses that
    /// matched that table's default route share one lookup (SharedLookups.swift), and the
    /// others of that family are asked for their FIB entry too, so that the next such round
    /// can share theirs.
    private func prefetchLookups(for targets: [(target: ReachabilityTarget, entry: Entry)], sharedTable: FamilyTable?) -> LookupPlan {
        var destinations: Set<IPAddress> = []
        var sharable: [(address: IPAddress, entry: Entry)] = []
        var individual: [ReachabilityTarget] = []
        individual.reserveCapacity(targets.count)
        let knownRules = state.withLock { state -> Int? in
            for (target, entry) in targets {
                switch target {
                case .address(let address):
                    if let table = sharedTable, address.family == table.family,
                       entry.matchedGeneration == state.matchGeneration, let matched = entry.matched,
                       matched.table == table.table, matched.prefix.isDefault {
                        sharable.append((address, entry))
                        continue
                    }
                    destinations.insert(address)
                case .host:
                    // A scoped address is asked through its link, on its own.
                    for resolved in entry.addresses ?? [] where resolved.interface == nil { destinations.insert(resolved.address) }
                case .internet, .addressPair, .scopedAddress: break
                }
                individual.append(target)
            }
            return sharedTable.flatMap { state.matchedRules[$0.family] }
        }
        var plan = LookupPlan(individual: individual)
        var learned: [IPAddress: MatchedEntry?] = [:]
        var rules: PolicyRuleSummary?
        if let table = sharedTable {
            rules = try? connection.policyRules(family: table.family)
            if sharable.count > 1, let rules, !rules.suppressesByInterfaceGroup, rules.fingerprint == knownRules,
               let shared = SharedAnswer(representative: sharable[0].address, table: table, connection: connection) {
                plan.shared = (shared, sharable)
            } else {
                destinations.formUnion(sharable.map(\.address))
                plan.individual += sharable.map { .address($0.address) }
            }
            let learning = destinations.filter { $0.family == table.family }.map { $0 }
            if rules != nil, !learning.isEmpty, let entries = try? connection.lookupFIBEntries(to: learning) {
                for (address, entry) in zip(learning, entries) { learned.updateValue(MatchedEntry(entry), forKey: address) }
            }
        }
        if destinations.count > 1 {
            let ordered = Array(destinations)
            if let answers = try? connection.lookupRoutes(to: ordered) {
                plan.results = Dictionary(uniqueKeysWithValues: zip(ordered, answers))
            }
        }
        if let table = sharedTable, let rules, !learned.isEmpty || plan.shared != nil {
            state.withLock { state in
                // Entries learned under other rules are not trusted any more.
                if state.matchedRules[table.family] != rules.fingerprint {
                    state.matchGeneration += 1
                    state.matchedRules[table.family] = rules.fingerprint
                }
                for (address, entry) in learned {
                    guard let target = state.entries[.address(address)] else { continue }
                    target.matched = entry
                    target.matchedGeneration = state.matchGeneration
                }
            }
        }
        return plan
    }

    /// What a round asks the kernel: the lookups of the targets evaluated one by one, and the
    /// group that shares one answer.
    private struct LookupPlan {
        /// Targets evaluated one by one, with the answers of `results` when there are some.
        var individual: [ReachabilityTarget]
        var results: [IPAddress: RouteLookupResult]?
        /// Address targets that share one answer (SharedLookups.swift), with their entries.
        var shared: (answer: SharedAnswer, members: [(address: IPAddress, entry: Entry)])?
    }

    /// Evaluates the shared answer once, gives each member its own copy (its address as
    /// destination), stores them and their FIB entry under one lock, and tells the watchers
    /// whose answer changed.
    ///
    /// The members' copies share the evaluated answer's storage, one box per block of
    /// deliveries (``DeliveryBatch/blockSize``): the callback queue's thread retains and
    /// releases the box of the block it runs while this thread fills the next block with
    /// another. With one box for all, each of those atomic reference counts moved the box's
    /// cache line between the two cores (about a sixth of the time to tell 10 000 monitors).
    private func evaluateAndStoreShared(_ shared: SharedAnswer, for members: [(address: IPAddress, entry: Entry)],
                                        in snapshot: Snapshot, batch: DeliveryBatch) {
        guard let representative = members.first?.address else { return }
        var base = ReachabilityEvaluator.evaluate(shared.result, address: representative, links: snapshot.network.links,
                                                  classifications: snapshot.classifications(for: shared.result))
        // An IPv6 default route without carrier: the answer past it, as for one address.
        if ReachabilityEvaluator.mayPassCarrierLoss(base, address: representative) {
            base = evaluate(.address(representative), addresses: nil, in: snapshot)
        }
        var notifications: [PendingDelivery] = []
        notifications.reserveCapacity(members.count)
        state.withLock { state in
            state.sharedLookups += members.count - 1
            for (position, (address, entry)) in members.enumerated() {
                if position > 0, position.isMultiple(of: DeliveryBatch.blockSize) { base = base.inOwnBox() }
                let answer = base.forMember(address)
                state.evaluations += 1
                entry.matched = shared.entry
                entry.matchedGeneration = state.matchGeneration
                let previous = entry.answer
                entry.answer = answer
                guard let previous, !previous.isSameAnswer(as: answer) else { continue }
                for watching in entry.watchers.values where watching.ready {
                    notifications.append(PendingDelivery(watcher: watching.watcher, answer: answer))
                }
            }
        }
        for pending in notifications { pending.watcher(pending.answer, batch) }
    }

    /// Evaluates `target`, stores the answer and tells the watchers if it changed.
    @discardableResult
    ///
    /// The watchers' callbacks go into `batch`; without one, they are sent at once.
    private func evaluateAndStore(_ target: ReachabilityTarget, in snapshot: Snapshot,
                                  lookups: [IPAddress: RouteLookupResult]? = nil,
                                  batch: DeliveryBatch? = nil) -> ReachabilityAnswer {
        var addresses: [ResolvedAddress]?
        var failure: ReachabilityError?
        if case .host(let name) = target {
            let neverResolved: Bool
            (addresses, failure, neverResolved) = state.withLock { state in
                let entry = state.entries[target]
                let cached = state.resolvedHosts[name]
                return (entry?.addresses ?? cached?.addresses,
                        entry?.addresses != nil ? entry?.resolutionFailure : cached?.failure,
                        entry?.addresses == nil && (entry?.resolutionGeneration ?? 1) == 0)
            }
            if neverResolved { resolve(target) }
        }
        let answer = evaluate(target, addresses: addresses, resolutionFailure: failure, in: snapshot, lookups: lookups)
        let watchers = state.withLock { state -> [Watching] in
            state.evaluations += 1
            guard let entry = state.entries[target] else { return [] }
            let previous = entry.answer
            entry.answer = answer
            // An answer of the ended subscription is not optimistic: it is the last word.
            entry.judgedWithoutAddresses = target.isHost && addresses == nil && snapshot.ended == nil
            // Watchers waiting for the host's first resolution get this answer as their first,
            // once it is known: resolved, or the subscription ended.
            var first: [UInt64] = []
            if entry.waitingWatchers > 0, addresses != nil || snapshot.ended != nil {
                first = entry.watchers.compactMap { $0.value.phase == .waiting ? $0.key : nil }
                for id in first { entry.watchers[id]!.phase = .ready }
                entry.waitingWatchers = 0
            }
            let changed = previous.map { !$0.isSameAnswer(as: answer) } ?? false
            if first.isEmpty { return changed ? entry.watchers.values.filter(\.ready) : [] }
            return entry.watchers.compactMap { id, watching in
                first.contains(id) || changed && watching.ready ? watching : nil
            }
        }
        if !watchers.isEmpty {
            let deliveries = batch ?? DeliveryBatch(inline: queue)
            for watching in watchers { watching.watcher(answer, deliveries) }
            if batch == nil { deliveries.send() }
        }
        return answer
    }

    /// Starts resolving a host name; the result is stored and evaluated on the queue.
    ///
    /// At most one resolution of an entry runs: a request while one runs is merged into one
    /// that starts when it ends. So a burst of network changes costs a watched name (shared by
    /// every monitor of it) at most two resolutions, and none runs once the changes stop and
    /// the last one has ended.
    ///
    /// The result is applied only to the entry that started the resolution, and only when it is
    /// newer than the last one applied there: a target watched again after its last watcher left
    /// has a new entry, and a slow resolution of the old one (a name server that does not answer
    /// until the timeout) must not overwrite, or keep out, the new entry's answers.
    private func resolve(_ target: ReachabilityTarget) {
        guard case .host(let name) = target else { return }
        let started = state.withLock { state -> (entry: UInt64, generation: Int, changes: Int)? in
            guard let entry = state.entries[target] else { return nil }
            guard !entry.resolving else {
                entry.resolutionPending = true
                return nil
            }
            entry.resolving = true
            entry.resolutionGeneration += 1
            return (entry.serial, entry.resolutionGeneration, state.hostNetworkChanges)
        }
        guard let started else { return }
        let (resolver, timeout) = (self.resolver, resolutionTimeout)
        Task(executorPreference: ResolutionExecutor.shared) { [weak self] in
            let result = await BoundedResolution.resolve(name, with: resolver, timeout: timeout)
            let addresses = (try? result.get()) ?? []
            guard let self else { return }
            self.queue.async {
                // A newer result than the last applied one wins, so answers land under churn too.
                let (current, again) = self.state.withLock { state -> (Bool, Bool) in
                    guard let entry = state.entries[target], entry.serial == started.entry else { return (false, false) }
                    entry.resolving = false
                    let again = entry.resolutionPending
                    entry.resolutionPending = false
                    guard started.generation > entry.appliedResolution else { return (false, again) }
                    entry.appliedResolution = started.generation
                    entry.addresses = addresses
                    entry.resolutionFailure = result.failure
                    if let failure = result.failure { self.logResolutionFailure(name, failure) }
                    state.addressIndex = nil
                    state.resolvedHosts[name] = (addresses, state.hostNetworkChanges != started.changes, result.failure)
                    return (true, again)
                }
                if current { self.evaluateAndStore(target, in: self.snapshot()) }
                if again { self.resolve(target) }
            }
        }
    }

    /// Logs a host name that could not be resolved.
    private func logResolutionFailure(_ name: String, _ failure: ReachabilityError) {
        logger.warning("a host name could not be resolved", metadata: [
            "namespace": "\(namespace)", "host": "\(name)", "error": "\(failure)"])
    }

    /// The namespace's state at one moment, read once for all the targets of one evaluation
    /// round, and its links' classifications, made as answers need them: only the links that
    /// answers go out through are classified (with what they stack on), each once while the
    /// links stay what they are.
    struct Snapshot: Sendable {
        var network: NetworkState
        /// Where the classifications come from.
        let classifier: LinkClassificationCache
        /// Why the subscription ended, once it has: the state is then the last one known.
        var ended: NetlinkError? = nil

        /// The classifications of the links of the default routes' next hops: what the
        /// internet's answer and a path look at.
        var defaultRouteClassifications: [Int32: LinkClassification] {
            classifier.classifications(ofLinksIn: network,
                                       needed: network.defaultRoutes.values.lazy.flatMap { $0.nexthops.lazy.compactMap(\.linkIndex) })
        }

        /// The classification of the link that `result` goes out through, if any (the only one
        /// an answer from a lookup looks at).
        func classifications(for result: RouteLookupResult) -> [Int32: LinkClassification] {
            guard let index = Self.outputLink(of: result) else { return [:] }
            return classifier.classifications(ofLinksIn: network, needed: CollectionOfOne(index))
        }

        private static func outputLink(of result: RouteLookupResult) -> Int32? {
            guard case .route(let route) = result else { return nil }
            return route.outputLinkIndex
        }
    }

    /// The namespace's state and classifications now.
    func snapshot() -> Snapshot {
        snapshot(of: subscription.state)
    }

    /// A snapshot of `network`, a state of the subscription.
    private func snapshot(of network: NetworkState) -> Snapshot {
        Snapshot(network: network, classifier: classifier, ended: termination)
    }

    /// The answer for a name server (an address, or a scoped one; see `NameServers.parse`)
    /// judged against `snapshot` (the path monitor's check, which must see the same links as
    /// the path it belongs to).
    func answer(for server: ReachabilityTarget, in snapshot: Snapshot) -> ReachabilityAnswer {
        evaluate(server, addresses: nil, in: snapshot)
    }

    /// The pure part: the subscription's state, kernel lookups, classifications.
    private func evaluate(_ target: ReachabilityTarget, addresses: [ResolvedAddress]?, resolutionFailure: ReachabilityError? = nil,
                          in snapshot: Snapshot,
                          lookups: [IPAddress: RouteLookupResult]? = nil) -> ReachabilityAnswer {
        if let ended = snapshot.ended {
            var answer = ReachabilityAnswer.notReachable(.monitoringEnded(ended))
            switch target {
            case .address(let address), .addressPair(_, let address), .scopedAddress(let address, _):
                answer.setAddresses(to: address)
            case .host: answer.addresses = addresses?.addresses ?? []
            case .internet: break
            }
            return answer
        }
        let network = snapshot.network
        func lookup(_ destination: IPAddress, from source: IPAddress? = nil, scope: String? = nil) -> ReachabilityAnswer {
            ReachabilityEvaluator.evaluate(destination, scope: scope, links: network.links) { outputLink in
                do throws(NetlinkError) {
                    var result: RouteLookupResult
                    if source == nil, outputLink == nil, let prefetched = lookups?[destination] {
                        result = prefetched
                    } else {
                        result = try connection.lookupRoute(to: destination, from: source, outputLinkIndex: outputLink)
                    }
                    // As connect(2): again from the source the kernel picks, when a rule or a
                    // default route selects by source (else the second lookup answers the same).
                    if source == nil, ReachabilityEvaluator.internetDependsOnAddresses(network) {
                        let first = result
                        result = try ReachabilityEvaluator.connectLookup(destination, outputLink: outputLink, lookup: { from, link throws(NetlinkError) in
                            guard let from else { return first }
                            return try connection.lookupRoute(to: destination, from: from, outputLinkIndex: link)
                        }, sourceWithoutRoute: { () throws(NetlinkError) in ReachabilityEvaluator.ipv6Source(in: network) })
                    }
                    let answer = ReachabilityEvaluator.evaluate(result, address: destination, links: network.links,
                                                                classifications: snapshot.classifications(for: result))
                    // An IPv6 default route without carrier: as the internet is judged (the FIB
                    // entry is asked only then, to know that the default route was matched).
                    guard source == nil, outputLink == nil, ReachabilityEvaluator.mayPassCarrierLoss(answer, address: destination),
                          case .route(let matched)? = try connection.lookupFIBEntries(to: [destination]).first else { return answer }
                    return ReachabilityEvaluator.answerPastCarrierLoss(answer, matched: matched, address: destination, in: network,
                                                                       classifications: snapshot.defaultRouteClassifications) ?? answer
                } catch {
                    return .notReachable(.lookupFailed(error), address: destination)
                }
            }
        }
        switch target {
        case .internet:
            return ReachabilityEvaluator.evaluateInternet(network, classifications: snapshot.defaultRouteClassifications)
        case .address(let address):
            var answer = lookup(address)
            answer.setAddresses(to: address)
            return answer
        case .addressPair(let local, let remote):
            var answer = lookup(remote, from: local)
            answer.setAddresses(to: remote)
            return answer
        case .scopedAddress(let address, let interface):
            var answer = lookup(address, scope: interface)
            answer.setAddresses(to: address)
            return answer
        case .host:
            guard let addresses else {
                // Optimistic until resolution finishes: the internet's answer.
                var answer = ReachabilityEvaluator.evaluateInternet(network, classifications: snapshot.defaultRouteClassifications)
                answer.route = nil
                return answer
            }
            guard !addresses.isEmpty else { return .notReachable(resolutionFailure.map { .resolutionFailed($0) } ?? .unresolved) }
            var answer = ReachabilityEvaluator.best(of: addresses.map { lookup($0.address, scope: $0.interface) })
                ?? .notReachable(.unresolved)
            answer.addresses = addresses.addresses
            return answer
        }
    }
}

/// Runs host-name resolution tasks on a serial dispatch queue of their own, so that they progress
/// even when an application blocks every thread of Swift's cooperative pool. Their jobs are
/// short (the blocking getaddrinfo runs on ``BlockingLanes``), and a serial queue, unlike a
/// concurrent one, does not start libdispatch's once-a-second thread-pool monitor.
final class ResolutionExecutor: TaskExecutor {
    static let shared = ResolutionExecutor()
    private let queue = DispatchQueue(label: "ReachabilityMonitor.resolution")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
