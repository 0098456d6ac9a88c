import CNetlink
import Glibc
import Synchronization

/// The event loop behind a ``NetlinkSubscription``: one thread that owns every libnl object of
/// the subscription.
///
/// libnl's cache manager (``CacheManager``) keeps the links, addresses and IP configurations
/// (and neighbours when asked) from the kernel's notifications, and its change callbacks come
/// here as typed changes; route, rule and next-hop notifications arrive on the same socket,
/// parsed by libnl, and only default routes are kept. A policy-rule message has its family's
/// rules read again, then reported as ``NetlinkEvent/rulesChanged(_:)``. The thread sleeps in
/// `epoll_wait` with no timeout: nothing runs while nothing changes.
final class SubscriptionEngine: @unchecked Sendable, CacheManagerObserver {
    // @unchecked Sendable: the properties under "loop thread only" are created, read and freed by
    // the loop thread alone (between `start` and the end of `run`), and libnl's callbacks run on
    // it too. Other threads touch only `wake` (an eventfd, safe to write from any thread, closed
    // when its last holder goes), the atomics, and `completion`, which has its own lock.
    let namespace: NetworkNamespace
    let options: SubscriptionOptions
    let publisher: Publisher
    private let wake: WakeSignal
    private var wakeDescriptor: Int32 { wake.descriptor }
    private let exitCoordinator: ExitCoordinator
    private let stopRequested = Atomic<Bool>(false)
    /// Whether the process's exit asked the loop to end (its observers are then not told).
    private let endedByExit = Atomic<Bool>(false)
    private let loopThread = Atomic<UInt>(0)
    /// The queue (its identity; 0 for none) whose block an observer on the loop thread waits
    /// for (see ``NetlinkSubscription/whileObserverWaits(for:_:)``): an exit from a block of that
    /// queue need not wait for the loop, which waits for it (see
    /// ``ExitCoordinator/endRunningLoops()``).
    private let waitedQueue = Atomic<UInt>(0)
    private let completion = ConditionLock()
    private var finished = false  // guarded by `completion`

    // Loop thread only.
    private var caches: CacheManager?
    private var requests: RequestSocket?
    private var epollDescriptor: Int32 = -1
    /// The watch of the namespace file's directory (the process's shared inotify instance),
    /// which sets `wake.namespaceFileTouched` and wakes the loop.
    private var namespaceFileWatch: DirectoryWatch.Token?
    /// A descriptor of the process whose namespace this is (``NetworkNamespace/owningProcess``),
    /// readable once it exits: the subscription then ends, as for a deleted named namespace.
    private var processDescriptor: Int32 = -1
    /// A timer (timerfd) set for the soonest expiry of a kept default route: the kernel's
    /// lookups pass an expired route over without a message (see `expiryTimerFired`).
    private var expiryTimerDescriptor: Int32 = -1
    /// When the timer is set to fire, if it is.
    private var armedExpiry: ContinuousClock.Instant?
    /// The soonest expiry of a default route that a notification brought since the timer was
    /// last set.
    private var notedExpiry: ContinuousClock.Instant?
    private var namespaceIdentity: NetworkNamespace.Identity?
    private var state = NetworkState()
    private var batch: [NetlinkEvent] = []
    private var linksToReconcile = Set<Int32>(minimumCapacity: 4)
    private var tablesToReconcile = Set<TableKey>(minimumCapacity: 4)
    /// The default-route dumps of one reconciliation.
    private var rereadFilters = Set<RouteFilter>(minimumCapacity: 4)
    /// Links to read again: their lower link left the namespace (see `removeLink`).
    private var linksToReread: Set<Int32> = []
    /// The next-hop objects by id, kept from `RTM_NEWNEXTHOP` / `RTM_DELNEXTHOP`, for routes
    /// that name one without carrying its next hops (see ``Route/nexthopID``).
    private var nexthopObjects: [UInt32: NexthopObject] = [:]
    /// Whether `nexthopObjects` may be out of date: the kernel flushes the objects of a link
    /// that goes down or loses its carrier without a message, and a route named an unknown one.
    private var nexthopObjectsStale = false
    /// Families whose policy rules changed, to be read again (see `ruleMessage`).
    private var rulesToReread: Set<AddressFamily> = []
    /// Messages seen since the loop last woke up for the notification socket (see
    /// `messageArrives`).
    private var messagesSinceWake = 0
    /// A batch of this wake-up went out unsettled: a re-read was marked (see `flush`).
    private var unsettledPublished = false
    /// Why the subscription ends, once the loop knows; observers are told after `teardown`.
    private var ending: NetlinkError?

    private init(namespace: NetworkNamespace, options: SubscriptionOptions, publisher: Publisher,
                 exitCoordinator: ExitCoordinator) throws(NetlinkError) {
        self.namespace = namespace
        self.options = options
        self.publisher = publisher
        self.exitCoordinator = exitCoordinator
        wake = try WakeSignal()
    }

    /// Starts the loop thread and returns once the initial state is read and published.
    ///
    /// - Parameter exitCoordinator: What ends the loop at the process's exit (tests give one of
    ///   their own).
    /// - Throws: The error of the loop's set-up; ESHUTDOWN once the process's exit has begun.
    static func start(namespace: NetworkNamespace, options: SubscriptionOptions, publisher: Publisher,
                      exitCoordinator: ExitCoordinator = .process) throws(NetlinkError) -> SubscriptionEngine {
        let engine = try SubscriptionEngine(namespace: namespace, options: options, publisher: publisher,
                                            exitCoordinator: exitCoordinator)
        guard exitCoordinator.register(engine) else {
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: ESHUTDOWN, context: "subscribe while the process exits")
        }
        let target: Int32
        do {
            target = namespace.isCurrent ? -1 : try namespace.openDescriptor()
        } catch {
            exitCoordinator.unregister(engine)
            throw error
        }
        let setup = UnsafeTransfer<Result<Void, NetlinkError>?>(nil)
        let ready = ConditionLock()
        do {
            try startThread(name: "netlink \(namespace)") {
                engine.run(target: target) { result in
                    ready.withLock {
                        setup.value = result
                        ready.broadcast()
                    }
                }
            }
        } catch {
            if target >= 0 { close(target) }
            exitCoordinator.unregister(engine)
            throw error
        }
        ready.withLock { while setup.value == nil { ready.wait() } }
        try setup.value!.get()
        return engine
    }

    /// Asks the loop to end and waits until it has freed everything, unless called on the loop
    /// thread itself (then the loop ends when the current callback returns).
    func stop() {
        requestStop()
        guard !isLoopThread else { return }
        completion.withLock { while !finished { completion.wait() } }
    }

    /// Asks the loop to end, without waiting.
    private func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        wake.signal()
    }

    // MARK: Process exit

    /// Asks the loop to end for the process's exit: its observers are not told (see
    /// ``ExitCoordinator``).
    func requestStopAtExit() {
        endedByExit.store(true, ordering: .releasing)
        requestStop()
    }

    /// Whether the calling thread is the loop's.
    var isLoopThread: Bool { loopThread.load(ordering: .acquiring) == UInt(pthread_self()) }

    /// Whether an observer on the loop thread waits for a block of the queue `queue` (an
    /// identity given to ``whileObserverWaits(for:_:)``) now.
    func isObserverWaiting(for queue: UInt) -> Bool { waitedQueue.load(ordering: .acquiring) == queue }

    /// Runs `body`, in which an observer on the loop thread waits for a block of the queue
    /// `queue` (its identity), marked as such (``isObserverWaiting(for:)``).
    func whileObserverWaits<T>(for queue: UInt, _ body: () -> T) -> T {
        waitedQueue.store(queue, ordering: .releasing)
        defer { waitedQueue.store(0, ordering: .releasing) }
        return body()
    }

    /// Waits until the loop has freed everything, or until `deadline` (CLOCK_REALTIME).
    /// - Returns: Whether it has.
    func waitUntilFinished(until deadline: timespec) -> Bool {
        completion.withLock {
            while !finished {
                if !completion.wait(until: deadline) { return finished }
            }
            return true
        }
    }

    // MARK: The loop thread

    private func run(target: Int32, ready: (Result<Void, NetlinkError>) -> Void) {
        loopThread.store(UInt(pthread_self()), ordering: .releasing)
        defer {
            exitCoordinator.unregister(self)
            completion.withLock {
                finished = true
                completion.broadcast()
            }
        }
        do {
            try setUp(target: target)
        } catch {
            ready(.failure(error))
            teardown()  // what setUp opened before it failed
            return
        }
        let wake = self.wake
        publisher.start(with: state) { wake.signal() }
        ready(.success(()))
        loop()
        // libnl's link objects are freed before anyone is told that the subscription ended: a
        // program that exits when told (`reach events` for a deleted namespace) then cannot
        // exit while this thread still frees them. libnl-route's destructors unregister the
        // operations that free a link's per-family data, and a link freed after them makes
        // libnl abort (`BUG()` in `do_foreach_af`).
        teardown()
        if !endedByExit.load(ordering: .acquiring) { publisher.terminate(ending ?? .stopped) }
    }

    private func setUp(target: Int32) throws(NetlinkError) {
        if target >= 0 {
            defer { close(target) }
            let home = DescriptorCreation.serialized { open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC) }
            guard home >= 0 else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "open own namespace")
            }
            defer { close(home) }
            var info = stat()
            if fstat(target, &info) == 0 {
                namespaceIdentity = .init(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
            }
            try NetworkNamespace.enter(target, description: namespace.description)
            do {
                try openSockets()
            } catch {
                try? NetworkNamespace.enter(home, description: "home")
                throw error
            }
            try NetworkNamespace.enter(home, description: "home")
            try watchNamespaceFile()
            try watchNamespaceProcess()
            // A deletion between opening the namespace and watching its file sent no event.
            if namespaceWasDeleted() {
                throw NetlinkError(code: NetlinkError.namespaceDeleted.code, context: "namespace \(namespace)")
            }
        } else {
            try openSockets()
        }
        try readInitialState()
        epollDescriptor = DescriptorCreation.serialized { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        guard epollDescriptor >= 0 else {
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "epoll_create1")
        }
        expiryTimerDescriptor = DescriptorCreation.serialized { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC)) }
        guard expiryTimerDescriptor >= 0 else {
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "timerfd_create")
        }
        for fd in [wakeDescriptor, caches!.descriptor, expiryTimerDescriptor, processDescriptor] where fd >= 0 {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.fd = fd
            if epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, fd, &event) != 0 {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "epoll_ctl")
            }
        }
    }

    /// Opens the request socket and libnl's cache manager, which fills its caches, all in the
    /// calling thread's current namespace. The manager joins every group before the dumps, so
    /// nothing that changes during them is missed: it waits in the socket and is applied
    /// afterwards.
    private func openSockets() throws(NetlinkError) {
        requests = try RequestSocket(namespace: namespace)
        let caches = try CacheManager(receiveBufferSize: options.receiveBufferSize,
                                      followsNeighbors: options.followsNeighbors, observer: self)
        self.caches = caches
        caches.adoptAlternativeNames(try requests!.alternativeNames())
    }

    /// Watches the directory of a namespace file, so that `ip netns del` ends the subscription.
    /// Without the watch the deletion would never end it (its streams would wait forever, its
    /// answers stay as they were), so no watch, no subscription.
    private func watchNamespaceFile() throws(NetlinkError) {
        guard let path = namespace.path, let slash = path.lastIndex(of: "/") else { return }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        guard !directory.hasPrefix("/proc") else { return }
        let mask = UInt32(IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)
        do {
            // The handler holds the wake signal, not the engine: it may run once more after the
            // watch is cancelled, and the eventfd stays open while it does.
            let wake = self.wake
            namespaceFileWatch = try DirectoryWatch.shared.watch([directory], mask: mask) { _, _ in
                wake.namespaceFileTouched.store(true, ordering: .releasing)
                wake.signal()
            }
        } catch {
            throw NetlinkError(code: error.code, systemErrno: error.systemErrno,
                               context: "\(error.context), to follow the deletion of namespace \(namespace)")
        }
    }

    /// Watches the process of a `/proc/PID/ns/net` namespace with a pidfd. The pidfd is opened
    /// after the namespace was: if the process died in between and its id was reused, the
    /// process's namespace now differs from the one entered, and the subscription ends at once.
    private func watchNamespaceProcess() throws(NetlinkError) {
        guard let pid = namespace.owningProcess else { return }
        var failure: Int32 = 0
        processDescriptor = DescriptorCreation.serialized { cnetlink_pidfd_open(pid, &failure) }
        guard processDescriptor >= 0 else {
            if failure == ESRCH { throw NetlinkError(code: NetlinkError.namespaceDeleted.code, context: "process \(pid) of namespace \(namespace) exited") }
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: failure, context: "pidfd_open \(pid), to follow namespace \(namespace)")
        }
        if namespaceWasDeleted() {
            throw NetlinkError(code: NetlinkError.namespaceDeleted.code, context: "process \(pid) of namespace \(namespace) exited")
        }
    }

    /// Takes what libnl's caches hold, and reads the rules, next-hop objects and default routes.
    private func readInitialState() throws(NetlinkError) {
        state.linkRevision = Self.nextLinkRevision()
        state.links = Dictionary(caches!.links().map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        state.addresses = Dictionary(caches!.addresses().map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        state.configurations = Dictionary(caches!.configurations().map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        state.neighbors = Dictionary(caches!.neighbors().map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        state.policyRules = try requests!.rules()
        nexthopObjects = try requests!.nexthopObjects()
        state.defaultRoutes = try dumpDefaultRoutes(filter: .defaultRoutes)
        batch.removeAll()
        forgetMarkedRereads()
    }

    private func loop() {
        var events = [epoll_event](repeating: epoll_event(), count: 8)
        let netlinkDescriptor = caches!.descriptor
        armExpiryTimer()   // for the routes the initial dump read
        while !stopRequested.load(ordering: .acquiring) {
            let count = epoll_wait(epollDescriptor, &events, Int32(events.count), -1)
            if count < 0 {
                if errno == EINTR { continue }
                ending = NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "epoll_wait")
                return
            }
            for event in events.prefix(Int(count)) {
                let fd = event.data.fd
                if fd == wakeDescriptor {
                    var value: UInt64 = 0
                    _ = read(wakeDescriptor, &value, 8)
                    if wake.namespaceFileTouched.exchange(false, ordering: .acquiringAndReleasing), namespaceWasDeleted() {
                        ending = NetlinkError(code: NetlinkError.namespaceDeleted.code, context: "namespace \(namespace)")
                        return
                    }
                    publisher.deliverOnSubscriptionThread()
                } else if fd == netlinkDescriptor {
                    messagesSinceWake = 0
                    readNotifications()
                } else if fd == expiryTimerDescriptor {
                    expiryTimerFired()
                } else if fd == processDescriptor {
                    ending = NetlinkError(code: NetlinkError.namespaceDeleted.code,
                                          context: "process \(namespace.owningProcess ?? 0) of namespace \(namespace) exited")
                    return
                }
            }
            // Observers get what the kernel said first; the routes the kernel changed silently
            // (found by a filtered dump) follow in a second batch, which settles the state.
            flush()
            guard !stopRequested.load(ordering: .acquiring) else { break }
            reconcileMarked()
            flush()
            if unsettledPublished, !stopRequested.load(ordering: .acquiring) {
                // The re-read changed nothing: the state told before it is settled.
                publisher.publishSettled()
            }
            unsettledPublished = false
            armExpiryTimer()
        }
    }

    // MARK: Expiring routes

    /// Sets the expiry timer for the soonest expiry that the dumps and notifications since the
    /// last call saw, when it is sooner than the one the timer is set for. A timer is set only
    /// while a kept default route expires (an IPv6 route from a router advertisement): none in
    /// a namespace without such routes, which stays without wake-ups while nothing changes.
    private func armExpiryTimer() {
        var soonest = requests?.takeSoonestExpiry()
        if let noted = notedExpiry { soonest.keepEarliest(noted) }
        notedExpiry = nil
        guard expiryTimerDescriptor >= 0, let soonest, armedExpiry.map({ soonest < $0 }) ?? true else { return }
        armedExpiry = soonest
        // A little after the expiry: the kernel's check is `time_after(jiffies, expires)`.
        let (seconds, attoseconds) = (max(soonest - .now, .zero) + .milliseconds(20)).components
        var setting = itimerspec()
        setting.it_value = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        timerfd_settime(expiryTimerDescriptor, 0, &setting, nil)
    }

    /// A kept default route may have expired: the tables of the kept IPv6 default routes (the
    /// routes that expire) are read again, and a route read as expired is not kept (see
    /// ``Route/parse(message:)``). A route whose router advertised it again since
    /// has a new lifetime, which sets the timer again.
    private func expiryTimerFired() {
        var count: UInt64 = 0
        _ = read(expiryTimerDescriptor, &count, 8)
        armedExpiry = nil
        for route in state.defaultRoutes.values where route.family == .ipv6 { reconcileTable(of: route) }
    }

    /// Has libnl's cache manager read every notification that waits; its callbacks come back
    /// as ``cacheChanged(_:)`` and ``uncachedMessage(_:)``. libnl reports the kernel's
    /// `ENOBUFS` (notifications dropped) as `-NLE_NOMEM`, which starts a re-read as an
    /// overflow; any other failure is reported with a re-read too.
    private func readNotifications() {
        let rc = caches!.read()
        guard rc < 0 else { return }
        if rc == -Int32(NLE_NOMEM) {
            resynchronize(reason: .overflow)
        } else {
            resynchronize(reason: .error(NetlinkError(libnlCode: rc, context: "read notifications")))
        }
    }

    // MARK: What libnl tells

    /// Publishes the change of the first message after a wake-up at once, before the next
    /// message is handled. When the kernel sends a burst (a link going down brings its route and
    /// address removals and the peer's change, all queued before anyone reads), the first line
    /// of the story reaches observers one parse earlier; the rest of the burst is still
    /// published as one batch, so a storm costs one extra publication per wake-up.
    func messageArrives() {
        messagesSinceWake += 1
        if messagesSinceWake == 2 { flush() }
    }

    func cacheChanged(_ change: CacheChange) {
        switch change {
        case .link(let old, let new):
            if let new { applyLink(new, deleted: false) } else if let old { applyLink(old, deleted: true) }
        case .address(let old, let new):
            if let new { applyAddress(new, deleted: false) } else if let old { applyAddress(old, deleted: true) }
        case .configuration(let old, let new):
            let key = (new ?? old)!.key
            let before = state.configurations[key]
            if var new {
                // The kernel's notification of one sysctl carries only that value, and libnl's
                // cache may take it as the whole object: the others are kept.
                new.keepValues(of: before)
                if let change = upsert(new, at: key, in: &state.configurations) { batch.append(.configuration(change)) }
            } else if let kept = state.configurations.removeValue(forKey: key) {
                batch.append(.configuration(.removed(kept)))
            }
            if before?.ignoresRoutesWithLinkdown != state.configurations[key]?.ignoresRoutesWithLinkdown {
                rereadRoutesMarkedDead(family: key.family, scope: key.scope)
            }
            // A renamed link's configuration is registered again (these messages) after the
            // kernel has attached the rules that name its new name, which it did after it told
            // of the rename: the rules are read once more.
            if case .link(let index) = key.scope, let link = state.links[index] { rereadRulesNaming(link.name) }
        case .neighbor(let old, let new):
            if let new {
                if let change = upsert(new, at: new.key, in: &state.neighbors) { batch.append(.neighbor(change)) }
            } else if let old, let kept = state.neighbors.removeValue(forKey: old.key) {
                batch.append(.neighbor(.removed(kept)))
            }
        }
    }

    func uncachedMessage(_ message: UncachedMessage) {
        switch message {
        case .route(let route, let deleted, let flags, let remainingLifetime):
            routeMessage(route, deleted: deleted, flags: flags, remainingLifetime: remainingLifetime)
        case .rule(let family):
            // Its family's rules are read again once the messages waiting are read (a script
            // that adds a hundred rules costs one dump, not a hundred), and reported then.
            rulesToReread.insert(family)
        case .nexthop(let object, let deleted):
            nexthopMessage(object, deleted: deleted)
        }
    }

    /// A next-hop object came, changed or went away (`ip nexthop`). The kernel flushes the
    /// routes that used a deleted one without a message, and re-points those of a replaced one
    /// with messages only in `nexthop_compat_mode`: the tables of the kept default routes that
    /// name an object are re-read (next-hop objects change rarely). A deleted object also leaves
    /// the groups it was in, which the kernel need not report either: the objects are read again.
    private func nexthopMessage(_ object: NexthopObject?, deleted: Bool) {
        guard let object else {
            nexthopObjectsStale = true
            return
        }
        if deleted {
            nexthopObjects[object.id] = nil
            if nexthopObjects.values.contains(where: { $0.members.contains { $0.id == object.id } }) {
                nexthopObjectsStale = true
            }
        } else {
            nexthopObjects[object.id] = object
        }
        for route in state.defaultRoutes.values where route.nexthopID != nil {
            reconcileTable(of: route)
        }
    }

    /// Sends what the last read produced to the observers: settled unless a re-read of what the
    /// kernel may have changed silently is marked (see `reconcileMarked`).
    private func flush() {
        guard !batch.isEmpty else { return }
        let settled = !rereadIsMarked
        publisher.publish(state: state, events: batch, settled: settled)
        unsettledPublished = !settled
        batch.removeAll(keepingCapacity: true)
    }

    /// Whether `reconcileMarked` has anything to re-read.
    private var rereadIsMarked: Bool {
        !linksToReconcile.isEmpty || !tablesToReconcile.isEmpty || nexthopObjectsStale || !rulesToReread.isEmpty
            || !linksToReread.isEmpty
    }

    /// Forgets the links, tables and rules marked for a re-read, after a read of the whole state
    /// has read them anyway (not the next-hop objects' mark, which only their re-read clears).
    private func forgetMarkedRereads() {
        linksToReconcile.removeAll()
        tablesToReconcile.removeAll()
        rulesToReread.removeAll()
        linksToReread.removeAll()
    }

    private func teardown() {
        caches = nil
        requests = nil
        if epollDescriptor >= 0 { close(epollDescriptor) }
        if let namespaceFileWatch { DirectoryWatch.shared.cancel(namespaceFileWatch) }
        namespaceFileWatch = nil
        if expiryTimerDescriptor >= 0 { close(expiryTimerDescriptor) }
        if processDescriptor >= 0 { close(processDescriptor) }
        processDescriptor = -1
        expiryTimerDescriptor = -1
        epollDescriptor = -1
    }

    // MARK: Changes

    /// Applies a link as a notification gave it.
    private func applyLink(_ link: Link, deleted: Bool) {
        if deleted {
            removeLink(index: link.index, lastSeen: link)
            return
        }
        guard let change = upsert(link, at: link.index, in: &state.links) else { return }
        noteLinkChange(change)
        batch.append(.link(change))
        switch change {
        case .new(let new): rereadRulesNaming(new.name)
        case .changed(let old, let new) where old.name != new.name: rereadRulesNaming(old.name, new.name)
        default: break
        }
        let reachability: InterfaceFlags = [.up, .running, .lowerUp]
        if case .changed(let old, _) = change,
           old.flags.intersection(reachability) != link.flags.intersection(reachability) || old.operState != link.operState {
            linksToReconcile.insert(link.index)
        }
    }

    /// Gives the links a new revision, unless `change` left the link what it was (it only went
    /// up or down, say), so that the classification cache knows without looking at every link.
    private func noteLinkChange(_ change: Change<Link>) {
        if case .changed(let old, let new) = change, new.differsOnlyInState(from: old) { return }
        state.linkRevision = Self.nextLinkRevision()
    }

    /// Link revisions, from one counter for the process: two subscriptions never share one.
    private static let linkRevisions = Atomic<UInt64>(0)

    private static func nextLinkRevision() -> UInt64 {
        linkRevisions.add(1, ordering: .relaxed).newValue
    }

    /// Forgets a link that went away, with its addresses and the default routes through it
    /// (the kernel flushes those without a notification).
    ///
    /// A link whose lower link it was, in this namespace, is read again at the end of the batch
    /// if it is still here: the other end of a veth pair whose peer moved to another namespace
    /// now has its lower link there (`IFLA_LINK_NETNSID`), which the kernel tells no one.
    private func removeLink(index: Int32, lastSeen: Link) {
        let old = state.links.removeValue(forKey: index) ?? lastSeen
        state.linkRevision = Self.nextLinkRevision()
        batch.append(.link(.removed(old)))
        for link in state.links.values where link.lowerLinkIndex == index && link.linkNamespaceID == nil {
            linksToReread.insert(link.index)
        }
        rereadRulesNaming(old.name)
        for (key, address) in state.addresses where address.linkIndex == index {
            state.addresses[key] = nil
            batch.append(.address(.removed(address)))
        }
        // The link's next-hop objects go with it, and leave their groups, silently.
        if nexthopObjects.values.contains(where: { $0.linkIndex == index }) { nexthopObjectsStale = true }
        for (key, route) in state.defaultRoutes where route.uses(linkIndex: index) {
            // IPv4 drops a multipath route with a hop on a deleted link whole; IPv6 drops only
            // that hop (`fib6_ifdown`), the route keeps the others, and with
            // `net.ipv6.route.skip_notify_on_dev_down` nobody is told: its table is re-read. A
            // route whose next-hop group keeps other members stays too, in either family.
            if route.family == .ipv6 || route.nexthopID != nil, route.nexthops.contains(where: { $0.linkIndex != index }) {
                reconcileTable(of: route)
                continue
            }
            state.defaultRoutes[key] = nil
            batch.append(.route(.removed(route)))
        }
        linksToReconcile.remove(index)
    }

    /// Applies an address as a notification gave it. A deletion reports the version that was
    /// kept, as libnl's cache did.
    private func applyAddress(_ address: InterfaceAddress, deleted: Bool) {
        let key = address.key
        if deleted {
            if let old = state.addresses.removeValue(forKey: key) {
                batch.append(.address(.removed(old)))
                // Removing an IPv4 address flushes, without a notification, the routes of its link
                // and the routes on any link that used it as their preferred source.
                linksToReconcile.insert(address.linkIndex)
                for route in state.defaultRoutes.values where route.preferredSource == address.address {
                    for hop in route.nexthops { if let index = hop.linkIndex { linksToReconcile.insert(index) } }
                }
            }
            return
        }
        if let change = upsert(address, at: key, in: &state.addresses) { batch.append(.address(change)) }
    }

    /// Reads the rules again, reports each marked family (as every rule message was reported
    /// before the rules were kept: a rule may differ in what ``PolicyRule`` does not hold), and
    /// marks the tables that a rule names for the first time for a re-read.
    private func rereadRules() throws(NetlinkError) {
        let current = try requests!.rules()
        for family in AddressFamily.allCases where rulesToReread.contains(family) {
            adoptRules(current[family], of: family)
            batch.append(.rulesChanged(family))
        }
        rulesToReread.removeAll()
    }

    /// Makes `rules` the state's rules of `family`, and marks the tables that a rule names for
    /// the first time: their default routes may not have been read (an IPv4 table dumped after
    /// the main one is read at the start only when a rule names it).
    /// - Returns: Whether the rules changed.
    @discardableResult
    private func adoptRules(_ rules: [PolicyRule]?, of family: AddressFamily) -> Bool {
        let old = state.policyRules[family]
        guard old != rules else { return false }
        state.policyRules[family] = rules
        let named = Set((old ?? []).map(\.table))
        for rule in rules ?? [] where rule.action == .toTable && !named.contains(rule.table) {
            tablesToReconcile.insert(TableKey(family: family, table: rule.table))
        }
        return true
    }

    /// Marks for a re-read the families with a rule that names a link by `names`: the kernel
    /// attaches and detaches such rules when a link of that name comes, goes or is renamed,
    /// without a rule message.
    private func rereadRulesNaming(_ names: String...) {
        for (family, rules) in state.policyRules where rules.contains(where: { rule in
            names.contains { $0 == rule.inputLinkName || $0 == rule.outputLinkName }
        }) {
            rulesToReread.insert(family)
        }
    }

    /// A route notification: default routes update the state; other routes are reported as
    /// they come; routes the kernel clones are not routes of a table and are ignored.
    private func routeMessage(_ route: Route, deleted: Bool, flags: Int32, remainingLifetime: Duration?) {
        var route = route
        guard !route.flags.contains(.cloned) else { return }
        if route.lacksObjectNexthops, !route.takeNexthops(from: nexthopObjects), route.isDefault, !deleted {
            // An object the kernel has not told of yet: the objects and the table are read
            // again, and the route is kept as it was until then (not without next hops).
            nexthopObjectsStale = true
            reconcileTable(of: route)
            return
        }
        if route.isDefault {
            var deleted = deleted
            if let lifetime = remainingLifetime {
                if lifetime > .zero {
                    notedExpiry.keepEarliest(.now + lifetime)
                } else {
                    // Told of already expired: the kernel's lookups pass it over.
                    deleted = true
                }
            }
            defaultRouteMessage(route, deleted: deleted, flags: flags)
        } else if deleted {
            batch.append(.route(.removed(route)))
        } else if flags & NLM_F_REPLACE != 0 {
            batch.append(.route(.replaced(route)))
        } else {
            batch.append(.route(.new(route)))
        }
    }

    /// Applies a default-route message. The plain cases (a new route, a replacement of exactly
    /// one route, the deletion of a route as kept) are applied directly. The others (a deletion
    /// of one path of a multipath route, an append next to a route with the same prefix, a
    /// replacement that matches several) are settled by re-reading that table's default routes.
    private func defaultRouteMessage(_ route: Route, deleted: Bool, flags: Int32) {
        let key = route.key
        let samePrefix = state.defaultRoutes.filter { $0.key.prefixPart == key.prefixPart }
        if deleted {
            // A route through a next-hop object is the only one with its key: its id tells it.
            if let old = state.defaultRoutes[key], route.nexthopID != nil || (old.nexthops.count <= 1 && route.nexthops.count <= 1) {
                state.defaultRoutes[key] = nil
                batch.append(.route(.removed(old)))
            } else if !samePrefix.isEmpty {
                reconcileTable(of: route)
            }
            return
        }
        if flags & NLM_F_REPLACE != 0, state.defaultRoutes[key] == nil {
            if samePrefix.count == 1, let (oldKey, old) = samePrefix.first {
                state.defaultRoutes[oldKey] = nil
                state.defaultRoutes[key] = route
                batch.append(.route(.changed(old: old, new: route)))
            } else {
                reconcileTable(of: route)
            }
            return
        }
        // An IPv6 route next to another with the same prefix part most likely joined it as a
        // multipath route (all but routes through next-hop objects, which stay apart), and the
        // message lists the new hop first, so its key is not the joined route's: it is not kept
        // as a route of its own (which the re-read would remove again); the kernel's dump says
        // what the table holds now.
        if route.family == .ipv6, samePrefix.keys.contains(where: { $0 != key }) {
            reconcileTable(of: route)
            return
        }
        if let change = upsert(route, at: key, in: &state.defaultRoutes) { batch.append(.route(RouteChange(change))) }
        // A replacement where several routes share the prefix replaced the kernel's first of
        // them, which need not be the one with this message's next hop.
        if flags & NLM_F_APPEND != 0 || (flags & NLM_F_REPLACE != 0 && samePrefix.count > 1) {
            reconcileTable(of: route)
        }
    }

    /// `ignore_routes_with_linkdown` changed: the kernel reports the next hops of a link
    /// without carrier as dead under it (and lookups pass them over), with no route message.
    /// The default routes of `family` through the links `scope` covers are read again.
    private func rereadRoutesMarkedDead(family: AddressFamily, scope: ConfigurationScope) {
        for route in state.defaultRoutes.values where route.family == family {
            if case .link(let index) = scope, !route.uses(linkIndex: index) { continue }
            reconcileTable(of: route)
        }
    }

    // MARK: Reconciliation with the kernel

    /// A routing table of one family, whose default routes must be re-read.
    private struct TableKey: Hashable {
        var family: AddressFamily
        var table: RouteTable
    }

    /// Marks the table of `route`, in its family, for a re-read of its default routes.
    private func reconcileTable(of route: Route) {
        tablesToReconcile.insert(TableKey(family: route.family, table: route.table))
    }

    /// Re-reads the default routes that a change may have touched without a notification:
    /// through links whose state changed (the kernel flushes routes of a link that goes down,
    /// and marks them `linkdown` when the carrier goes, without telling anyone: libnl #340,
    /// #418), and in tables where a message was ambiguous (see `defaultRouteMessage`). Each is a
    /// dump of one table: in IPv4 read to the table's first route that is not a default route (a
    /// datagram, however large the table), in IPv6 filtered by the kernel by output link too.
    private func reconcileMarked() {
        guard rereadIsMarked else { return }
        // Links whose lower link left (see `removeLink`), unless they went with it.
        for index in linksToReread where state.links[index] != nil {
            do {
                if let link = try requests!.link(index: index) { applyLink(link, deleted: false) }
            } catch {
                resynchronize(reason: .error(error))
                return
            }
        }
        linksToReread.removeAll()
        if !rulesToReread.isEmpty {
            do {
                try rereadRules()
            } catch {
                resynchronize(reason: .error(error))
                return
            }
        }
        // The kernel flushes the next-hop objects of a link that goes down or loses its
        // carrier (`nexthop_flush_dev`), and with them the routes left without one, without a
        // message; a group keeps its other members, and the routes that use it stay: the
        // objects are read again and the tables of the routes that name one are read whole. A
        // link that comes back takes nothing.
        if !nexthopObjects.isEmpty, linksToReconcile.contains(where: { index in
            state.links[index].map(Self.flushesItsNexthopObjects) ?? true
                && nexthopObjects.values.contains { $0.linkIndex == index }
        }) {
            nexthopObjectsStale = true
        }
        if nexthopObjectsStale {
            do {
                try rereadNexthopObjects()
            } catch {
                resynchronize(reason: .error(error))
                return
            }
        }
        // The kernel changes routes silently only by removing or flagging routes that exist, so
        // a link matters only when a kept default route uses it, and only in the families and
        // tables of those routes: a flip of a link that carries no default route costs no dump.
        // Naming the table spares the kernel a walk of the others (an IPv4 dump of every table
        // walks the local routes of every address).
        rereadFilters.removeAll(keepingCapacity: true)
        for route in state.defaultRoutes.values {
            for index in linksToReconcile where route.uses(linkIndex: index) {
                rereadFilters.insert(RouteFilter(family: route.family, table: route.table, outputLinkIndex: index,
                                                 defaultOnly: true))
            }
        }
        for table in tablesToReconcile {
            rereadFilters.insert(RouteFilter(family: table.family, table: table.table, defaultOnly: true))
        }
        // Kept allocated: a flip marks its link again before its first event goes out, and a
        // new set's storage would be allocated and grown on that path each time.
        linksToReconcile.removeAll(keepingCapacity: true)
        tablesToReconcile.removeAll(keepingCapacity: true)
        for filter in rereadFilters {
            do {
                try reread(filter)
            } catch {
                resynchronize(reason: .error(error))
                return
            }
        }
    }

    /// Dumps the default routes that `filter` selects and makes the kept ones that it selects
    /// equal to them, reporting the differences.
    private func reread(_ filter: RouteFilter) throws(NetlinkError) {
        var filter = filter
        var dumped: [Route.Key: Route]?
        do {
            dumped = try dumpDefaultRoutesOfLiveTable(filter: filter)
        } catch where filter.outputLinkIndex != nil && error.systemErrno == ENODEV {
            dumped = nil
        }
        // The link went away meanwhile (only an IPv6 dump names it: the kernel filters those),
        // or its hop did: its single-path routes went with it, but an IPv6 multipath route loses
        // only the link's hop (`fib6_ifdown`) and no longer shows in the link's dump. Then the
        // table is read without the link.
        if let index = filter.outputLinkIndex, dumped == nil || state.defaultRoutes.contains(where: { key, route in
            dumped?[key] == nil && filter.matches(route) && route.nexthops.contains { $0.linkIndex != index }
        }) {
            filter.outputLinkIndex = nil
            dumped = try dumpDefaultRoutesOfLiveTable(filter: filter)
        }
        var current = dumped ?? [:]
        // A dump of every table reads the IPv4 tables of bucket 255 (ids 255 modulo 256: the
        // local table, 511, 767, ...) only when a policy rule names them (see
        // `RequestSocket.forEachDefaultRoute`); those the state keeps a default route of, told by
        // a message, are read by name, so that the re-read does not take them for gone.
        if filter.table == nil, filter.family != .ipv6 {
            let unread = Set(state.defaultRoutes.values.lazy
                .filter { $0.family == .ipv4 && $0.table.rawValue % 256 == 255 && filter.matches($0) }.map(\.table))
            for table in unread {
                var byName = filter
                byName.family = .ipv4
                byName.table = table
                current.merge(try dumpDefaultRoutesOfLiveTable(filter: byName)) { _, named in named }
            }
        }
        // The kernel tells of a link going down before it flushes that link's IPv4 routes, and
        // the dump does not wait for the flush (Linux 6.10+ dumps IPv4 routes without RTNL): a
        // route the flush is about to take is not kept.
        current = current.filter { !Self.isFlushedWithItsLinks($0.value, links: state.links) }
        let previous = state.defaultRoutes.filter { filter.matches($0.value) }
        replace(previous, with: current, in: &state.defaultRoutes) { batch.append(.route(RouteChange($0))) }
    }

    /// Whether the kernel removes `route` because its links are down: an IPv4 route whose every
    /// next hop goes out through a link that is not up. The kernel flushes those when a link
    /// goes down (`fib_disable_ip`) and refuses to add one (`ENETDOWN`), so none exists for
    /// long. A route that names a next-hop object, of either family, goes with its object's
    /// links in the same way, and also when they lose their carrier (neither running nor lower
    /// up): the kernel flushes the objects of such a link (`nexthop_flush_dev`), and routes with
    /// them. A route without next hops (a blackhole) or through a link the state does not know
    /// is not judged.
    static func isFlushedWithItsLinks(_ route: Route, links: [Int32: Link]) -> Bool {
        let usesObject = route.nexthopID != nil
        guard !route.nexthops.isEmpty, route.family == .ipv4 || usesObject else { return false }
        return route.nexthops.allSatisfy { hop in
            guard let link = hop.linkIndex.flatMap({ links[$0] }) else { return false }
            return usesObject ? flushesItsNexthopObjects(link) : !link.isUp
        }
    }

    /// Whether the kernel deletes the next-hop objects of `link`: it is down, or neither running
    /// nor lower up (`nh_netdev_event`).
    static func flushesItsNexthopObjects(_ link: Link) -> Bool {
        !link.isUp || link.flags.isDisjoint(with: [.running, .lowerUp])
    }

    /// Reads the next-hop objects again, and marks the tables of the default routes that name
    /// one for a whole re-read: a route's object may have lost members or changed.
    private func rereadNexthopObjects() throws(NetlinkError) {
        nexthopObjects = try requests!.nexthopObjects()
        nexthopObjectsStale = false
        for route in state.defaultRoutes.values where route.nexthopID != nil {
            reconcileTable(of: route)
        }
    }

    /// `dumpDefaultRoutes`, where a table that went away meanwhile has no routes left.
    private func dumpDefaultRoutesOfLiveTable(filter: RouteFilter) throws(NetlinkError) -> [Route.Key: Route] {
        do {
            return try dumpDefaultRoutes(filter: filter)
        } catch where filter.table != nil && error.systemErrno == ENOENT {
            return [:]
        }
    }

    private func dumpDefaultRoutes(filter: RouteFilter) throws(NetlinkError) -> [Route.Key: Route] {
        var routes: [Route.Key: Route] = [:]
        try requests!.forEachRoute(filter, nexthopObjects: nexthopObjects, objectsRead: { nexthopObjects = $0 },
                                   restart: { routes.removeAll() }) { routes[$0.key] = $0 }
        return routes
    }

    /// Throws away what waits in the socket, re-reads links, addresses and default routes,
    /// reports the differences and then `resynchronized`. Tried a few times; if the kernel keeps
    /// failing, the subscription ends with the error.
    private func resynchronize(reason: ResynchronizationReason) {
        var lastError: NetlinkError?
        for _ in 0..<5 {
            drainDescriptor(caches!.descriptor)
            do {
                let names = try requests!.alternativeNames()
                try requests!.withPeeking { (socket) throws(NetlinkError) in
                    try caches!.resynchronize(on: socket, alternativeNames: names)
                }
                try rereadNexthopObjects()
                try reread(.defaultRoutes)
                // Rules the notifications would have told of: reported before `resynchronized`.
                let rules = try requests!.rules()
                for family in AddressFamily.allCases where adoptRules(rules[family], of: family) {
                    batch.append(.rulesChanged(family))
                }
                forgetMarkedRereads()
                batch.append(.resynchronized(reason))
                publisher.countResynchronization()
                return
            } catch {
                lastError = error
            }
        }
        flush()
        ending = lastError ?? .failure
        stopRequested.store(true, ordering: .releasing)
    }

    /// True when the namespace file is gone or now names another namespace.
    private func namespaceWasDeleted() -> Bool {
        guard let path = namespace.path else { return false }
        var info = stat()
        guard stat(path, &info) == 0 else { return true }
        guard let identity = namespaceIdentity else { return false }
        return UInt64(info.st_dev) != identity.device || UInt64(info.st_ino) != identity.inode
    }
}

/// The eventfd that wakes a subscription's loop from other threads, with the flag that says the
/// namespace file's directory changed. Its own object, so that whoever may still signal it (the
/// directory watch's handler) keeps the descriptor open, and the engine needs no weak
/// reference for that.
final class WakeSignal: Sendable {
    let descriptor: Int32
    /// Set by the directory watch before it signals: the loop checks whether the namespace's
    /// file is gone.
    let namespaceFileTouched = Atomic<Bool>(false)

    init() throws(NetlinkError) {
        descriptor = DescriptorCreation.serialized { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) }
        if descriptor < 0 {
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "eventfd")
        }
    }

    deinit { close(descriptor) }

    /// Wakes the loop.
    func signal() {
        var one: UInt64 = 1
        _ = write(descriptor, &one, 8)
    }
}
