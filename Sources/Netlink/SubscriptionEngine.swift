import CNetlink
import Glibc
import Logging
import Synchronization

/// The event loop behind a ``NetlinkSubscription``: one thread that owns every libnl object of
/// the subscription, and does its I/O.
///
/// libnl's cache manager (``CacheManager``) keeps the links, addresses and IP configurations
/// (and neighbours when asked) from the kernel's notifications; its change callbacks, and the
/// route, rule and next-hop notifications that arrive on the same socket parsed by libnl, go
/// to the ``KernelStateModel``, which decides what they change and what must be read again.
/// This class reads what the model marks, hands it back and publishes the model's events. The
/// thread sleeps in `epoll_wait` with no timeout: nothing runs while nothing changes.
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
    private var namespaceIdentity: NetworkNamespace.Identity?
    /// The kernel state and the rules that change it; this class only reads and writes.
    private var model = KernelStateModel(state: NetworkState(), nexthopObjects: [:])
    /// Messages seen in the current read of notifications (see `publishFirstMessage`).
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
        publisher.start(with: model.state) { wake.signal() }
        logger.debug("subscription started", metadata: stateMetadata)
        ready(.success(()))
        loop()
        // libnl's link objects are freed before anyone is told that the subscription ended: a
        // program that exits when told (`reach events` for a deleted namespace) then cannot
        // exit while this thread still frees them. libnl-route's destructors unregister the
        // operations that free a link's per-family data, and a link freed after them makes
        // libnl abort (`BUG()` in `do_foreach_af`).
        teardown()
        logEnd()
        if !endedByExit.load(ordering: .acquiring) { publisher.terminate(ending ?? .stopped) }
    }

    // MARK: Logging

    private var logger: Logger { options.logger }

    /// The namespace and the size of the state, for log messages.
    private var stateMetadata: Logger.Metadata {
        ["namespace": "\(namespace)", "links": "\(model.state.links.count)",
         "addresses": "\(model.state.addresses.count)", "default-routes": "\(model.state.defaultRoutes.count)"]
    }

    /// Logs why the subscription ended: asked to, its namespace went away, or a failure.
    private func logEnd() {
        let metadata: Logger.Metadata = ["namespace": "\(namespace)"]
        switch ending {
        case nil:
            logger.debug("subscription stopped", metadata: metadata)
        case let error? where error.code == NetlinkError.namespaceDeleted.code:
            logger.notice("the namespace went away; the subscription ended", metadata: metadata.merging(["reason": "\(error)"]) { $1 })
        case let error?:
            logger.error("the subscription failed and ended", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
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
        var state = NetworkState()
        state.links = Dictionary(caches!.links().map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
        state.addresses = Dictionary(caches!.addresses().map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        state.configurations = Dictionary(caches!.configurations().map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        state.neighbors = Dictionary(caches!.neighbors().map { ($0.key, $0) }, uniquingKeysWith: { _, last in last })
        state.policyRules = try requests!.rules()
        model = KernelStateModel(state: state, nexthopObjects: try requests!.nexthopObjects())
        model.adoptDefaultRoutes(try dumpDefaultRoutes(filter: .defaultRoutes), selectedBy: .defaultRoutes)
        _ = model.takeEvents()
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
        if let noted = model.takeNotedExpiry() { soonest.keepEarliest(noted) }
        guard expiryTimerDescriptor >= 0, let soonest, armedExpiry.map({ soonest < $0 }) ?? true else { return }
        armedExpiry = soonest
        // Well after the expiry: the kernel's check is `time_after(jiffies, expires)`, the
        // lifetime read was cut to a hundredth of a second, and a route that expired less than
        // one such tick ago reads `rta_expires` 0, which means "never expires".
        let (seconds, attoseconds) = (max(soonest - .now, .zero) + .milliseconds(50)).components
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
        model.expiryPassed()
    }

    /// Has libnl's cache manager read every notification that waits; its callbacks come back
    /// as ``cacheChanged(_:)`` and ``uncachedMessage(_:)``. libnl reports the kernel's
    /// `ENOBUFS` (notifications dropped) as `-NLE_NOMEM`, which starts a re-read as an
    /// overflow; any other failure is reported with a re-read too.
    private func readNotifications() {
        messagesSinceWake = 0
        let rc = caches!.read()
        // What changes outside a read of notifications (a re-read's differences) is one batch.
        messagesSinceWake = 0
        guard rc < 0 else { return }
        if rc == -Int32(NLE_NOMEM) {
            resynchronize(reason: .overflow)
        } else {
            resynchronize(reason: .error(NetlinkError(libnlCode: rc, context: "read notifications")))
        }
    }

    // MARK: What libnl tells

    /// Counts the messages of a read (see `publishFirstMessage`).
    func messageArrives() {
        messagesSinceWake += 1
    }

    func cacheChanged(_ change: CacheChange) {
        model.apply(change)
        publishFirstMessage()
    }

    func uncachedMessage(_ message: UncachedMessage) {
        model.apply(message, receivedAt: .now)
        publishFirstMessage()
    }

    /// Publishes the changes of the first message after a wake-up at once, before the next
    /// message is read. When the kernel sends a burst (a link going down brings its route and
    /// address removals and the peer's change, all queued before anyone reads), the first line
    /// of the story reaches observers as soon as libnl has parsed it, as libnl's own change
    /// callback would; the rest of the burst is published as one batch, so a storm costs one
    /// extra publication per wake-up.
    private func publishFirstMessage() {
        if messagesSinceWake == 1 { flush() }
    }

    /// Sends the model's events to the observers: settled unless a re-read of what the kernel
    /// may have changed silently is marked (see `reconcileMarked`).
    private func flush() {
        guard model.hasEvents else { return }
        let settled = model.isSettled
        publisher.publish(state: model.state, events: model.takeEvents(), settled: settled)
        unsettledPublished = !settled
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

    // MARK: Reading again what the kernel changed silently

    /// Reads what the model marked (``KernelStateModel/Rereads``) and hands it back: links
    /// whose lower link left, rules, next-hop objects, then the default routes of the marked
    /// links and tables. Each route re-read is a dump of one table: in IPv4 read to the table's
    /// first route that is not a default route (a datagram, however large the table), in IPv6
    /// filtered by the kernel by output link too. A failure re-reads everything.
    private func reconcileMarked() {
        guard !model.isSettled else { return }
        do {
            for index in model.takeLinksWithLostLowerLink() {
                model.adoptRereadLink(try requests!.link(index: index))
            }
            if !model.rereads.ruleFamilies.isEmpty {
                model.adoptRereadRules(try requests!.rules())
            }
            if model.nexthopObjectsNeedReread() {
                model.adoptNexthopObjects(try requests!.nexthopObjects())
            }
            for filter in model.takeRouteRereads() {
                try reread(filter)
            }
        } catch {
            resynchronize(reason: .error(error))
        }
    }

    /// Dumps the default routes that `filter` selects and hands them to the model.
    private func reread(_ filter: RouteFilter) throws(NetlinkError) {
        var filter = filter
        var dumped: [Route.Key: Route]?
        do {
            dumped = try dumpDefaultRoutesOfLiveTable(filter: filter)
        } catch where filter.outputLinkIndex != nil && error.systemErrno == ENODEV {
            dumped = nil
        }
        if model.needsDumpWithoutLink(filter, dumped: dumped) {
            filter.outputLinkIndex = nil
            dumped = try dumpDefaultRoutesOfLiveTable(filter: filter)
        }
        var current = dumped ?? [:]
        for table in model.tablesUnreadByDump(filter) {
            var byName = filter
            byName.family = .ipv4
            byName.table = table
            current.merge(try dumpDefaultRoutesOfLiveTable(filter: byName)) { _, named in named }
        }
        model.adoptDefaultRoutes(current, selectedBy: filter)
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
        try requests!.forEachRoute(filter, nexthopObjects: model.nexthopObjects,
                                   objectsRead: { model.takeNexthopObjectsReadByDump($0) },
                                   restart: { routes.removeAll() }) { routes[$0.key] = $0 }
        return routes
    }

    /// Throws away what waits in the socket, re-reads links, addresses and default routes,
    /// reports the differences and then `resynchronized`. Tried a few times; if the kernel keeps
    /// failing, the subscription ends with the error.
    private func resynchronize(reason: ResynchronizationReason) {
        var lastError: NetlinkError?
        let eventsBefore = model.events.count
        for attempt in 1...5 {
            drainDescriptor(caches!.descriptor)
            do {
                let names = try requests!.alternativeNames()
                try requests!.withPeeking { (socket) throws(NetlinkError) in
                    try caches!.resynchronize(on: socket, alternativeNames: names)
                }
                model.adoptNexthopObjects(try requests!.nexthopObjects())
                try reread(.defaultRoutes)
                model.finishResynchronization(rules: try requests!.rules(), reason: reason)
                publisher.countResynchronization()
                // The differences found, without the `resynchronized` event itself.
                let found = model.events.count - eventsBefore - 1
                logger.notice("re-read the kernel's state", metadata: stateMetadata.merging(
                    ["reason": "\(reason)", "changes-found": "\(found)"]) { $1 })
                return
            } catch {
                lastError = error
                logger.warning("a re-read of the kernel's state failed", metadata: [
                    "namespace": "\(namespace)", "attempt": "\(attempt)", "error": "\(error)"])
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
