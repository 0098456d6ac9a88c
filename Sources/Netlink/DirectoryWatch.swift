import CNetlink
import Glibc
import Synchronization

/// One inotify instance for the whole process, shared by everything that follows files in a
/// few directories: the subscriptions of named namespaces (`/run/netns`, for `ip netns del`) and
/// the path monitors' resolver configuration (`/etc`, `/etc/netns/NAME`).
///
/// A user has 128 inotify instances by default (`/proc/sys/fs/inotify/max_user_instances`),
/// which desktops and container hosts use up; one per subscription ran out at the 129th
/// namespace followed. Here the process takes one, whatever it follows.
///
/// A thread of its own, started with the first watch, waits in `poll(2)` on the descriptor and
/// hands each watcher the names touched in its directories: nothing runs while nothing changes.
/// When the last watch is cancelled, the thread ends and the instance is closed; the next watch
/// starts both again. (Not a dispatch source: libdispatch's event loop cannot start without
/// free descriptors, and stops the process then, where a subscription must fail with an
/// error.) Watches are added with `IN_MASK_ADD` and kept until their directory goes (the kernel
/// then drops them).
package final class DirectoryWatch: Sendable {
    /// The process's instance.
    package static let shared = DirectoryWatch()

    /// What ``watch(_:mask:handler:)`` returns, to ``cancel(_:)`` with.
    package struct Token: Hashable, Sendable {
        let id: UInt64
    }

    private struct Watcher {
        /// The inotify instance the watch descriptors belong to (see ``State/instance``).
        var instance: UInt64
        /// The kernel's watch descriptor of each directory: two spellings of one directory
        /// (`/var/run/netns` and `/run/netns`) share one, which names the directory last added.
        var directories: [Int32: String]
        var mask: UInt32
        var handler: @Sendable (_ directory: String, _ names: [String]) -> Void
    }

    private struct State {
        /// The inotify descriptor and the eventfd that ends its thread; -1 while no watch runs.
        var descriptor: Int32 = -1
        var stop: Int32 = -1
        /// Counts the instances, so that the watchers of one that is ending are never handed
        /// the events of the next.
        var instance: UInt64 = 0
        var watchers: [UInt64: Watcher] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    /// Calls `handler` on the watch's own thread with a directory of `directories` and the names
    /// of the entries in it that an event of `mask` touched (no names when the kernel's event
    /// queue overflowed: anything may have changed). Directories that do not exist are left out.
    /// - Throws: A ``NetlinkError`` with the system's reason when inotify cannot be set up or
    ///   none of the directories can be watched.
    package func watch(_ directories: [String], mask: UInt32,
                       handler: @escaping @Sendable (_ directory: String, _ names: [String]) -> Void) throws(NetlinkError) -> Token {
        try state.withLock { (state) throws(NetlinkError) -> Token in
            if state.descriptor < 0 {
                let descriptor = DescriptorCreation.serialized { inotify_init1(Int32(IN_CLOEXEC)) }
                guard descriptor >= 0 else {
                    throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "inotify_init1")
                }
                let stop = DescriptorCreation.serialized { eventfd(0, Int32(EFD_CLOEXEC)) }
                guard stop >= 0 else {
                    let failure = errno
                    close(descriptor)
                    throw NetlinkError(code: NetlinkError.failure.code, systemErrno: failure, context: "eventfd")
                }
                let instance = state.instance + 1
                do throws(NetlinkError) {
                    try startThread(name: "inotify") { [self] in
                        run(descriptor, stop: stop, instance: instance)
                    }
                } catch {
                    close(descriptor)
                    close(stop)
                    throw error
                }
                state.descriptor = descriptor
                state.stop = stop
                state.instance = instance
            }
            var watched: [Int32: String] = [:]
            var failure: Int32 = 0
            for directory in Set(directories) {
                let wd = inotify_add_watch(state.descriptor, directory, mask | UInt32(IN_MASK_ADD))
                if wd < 0 { failure = errno; continue }
                watched[wd] = directory
            }
            guard !watched.isEmpty else {
                if state.watchers.isEmpty { Self.end(&state) }
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: failure,
                                   context: "inotify_add_watch \(directories.joined(separator: ", "))")
            }
            state.nextID += 1
            state.watchers[state.nextID] = Watcher(instance: state.instance, directories: watched, mask: mask, handler: handler)
            return Token(id: state.nextID)
        }
    }

    /// Adds `directories` to the watcher's, with the mask it was made with, when they exist
    /// (a directory that appears after the watch started: see ``watch(_:mask:handler:)``).
    /// Does nothing for a watcher that was cancelled.
    package func add(_ directories: [String], to token: Token) {
        state.withLock { state in
            guard let watcher = state.watchers[token.id] else { return }
            // A directory watched already gets its watch descriptor again.
            for directory in directories {
                let wd = inotify_add_watch(state.descriptor, directory, watcher.mask | UInt32(IN_MASK_ADD))
                if wd >= 0 { state.watchers[token.id]!.directories[wd] = directory }
            }
        }
    }

    /// Stops calling the watcher's handler (one running now may finish). The last watch's
    /// cancellation ends the thread, which closes the instance.
    package func cancel(_ token: Token) {
        state.withLock { state in
            guard state.watchers.removeValue(forKey: token.id) != nil, state.watchers.isEmpty else { return }
            Self.end(&state)
        }
    }

    /// Tells the running instance's thread to end (it closes the instance); the next watch
    /// starts another.
    private static func end(_ state: inout State) {
        guard state.stop >= 0 else { return }
        var one: UInt64 = 1
        _ = write(state.stop, &one, 8)
        state.descriptor = -1
        state.stop = -1
    }

    /// Whether the watch's thread runs (for tests).
    package var isRunning: Bool { state.withLock { $0.descriptor >= 0 } }

    /// The thread of one instance: waits for events or for the end, and closes the instance's
    /// descriptors once told to end.
    private func run(_ descriptor: Int32, stop: Int32, instance: UInt64) {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        while true {
            guard poll(&descriptors, 2, -1) > 0 else { continue }  // EINTR
            if descriptors[1].revents != 0 { break }
            if descriptors[0].revents != 0 { deliver(descriptor, instance: instance) }
        }
        close(descriptor)
        close(stop)
    }

    /// Reads the events that wait, then hands each watcher of `instance` the names touched in
    /// its directories.
    private func deliver(_ descriptor: Int32, instance: UInt64) {
        var touched: [Int32: [String]] = [:]
        var overflowed = false
        var ignored: [Int32] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return }  // EINTR
        var offset = 0
        while offset + MemoryLayout<inotify_event>.size <= count {
            let (wd, mask, length) = buffer.withUnsafeBytes { raw -> (Int32, UInt32, Int) in
                let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                return (event.wd, event.mask, Int(event.len))
            }
            let start = offset + MemoryLayout<inotify_event>.size
            let nameBytes = buffer[start..<min(start + length, count)].prefix { $0 != 0 }
            if mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
            if mask & UInt32(IN_IGNORED) != 0 { ignored.append(wd) }
            if wd >= 0 { touched[wd, default: []].append(String(decoding: nameBytes, as: UTF8.self)) }
            offset = start + length
        }
        let watchers = state.withLock { state in
            let watchers = state.watchers.values.filter { $0.instance == instance }
            // The kernel dropped these watches (their directories went; what it said about them
            // before is still told below): a directory made again under the same name is another
            // watch (see ``add(_:to:)``).
            for wd in ignored {
                for id in state.watchers.keys where state.watchers[id]!.instance == instance {
                    state.watchers[id]!.directories[wd] = nil
                }
            }
            return watchers
        }
        for watcher in watchers {
            for (wd, directory) in watcher.directories {
                if overflowed {
                    watcher.handler(directory, [])
                } else if let names = touched[wd] {
                    watcher.handler(directory, names)
                }
            }
        }
    }
}
