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
/// A thread of its own, started with the first watch, waits in `read(2)` on the descriptor and
/// hands each watcher the names touched in its directories: nothing runs while nothing changes.
/// (Not a dispatch source: libdispatch's event loop cannot start without free descriptors, and
/// stops the process then, where a subscription must fail with an error.) Watches are added with
/// `IN_MASK_ADD` and kept until their directory goes (the kernel then drops them).
package final class DirectoryWatch: Sendable {
    /// The process's instance.
    package static let shared = DirectoryWatch()

    /// What ``watch(_:mask:handler:)`` returns, to ``cancel(_:)`` with.
    package struct Token: Hashable, Sendable {
        let id: UInt64
    }

    private struct Watcher {
        /// The kernel's watch descriptor of each directory: two spellings of one directory
        /// (`/var/run/netns` and `/run/netns`) share one, which names the directory last added.
        var directories: [Int32: String]
        var mask: UInt32
        var handler: @Sendable (_ directory: String, _ names: [String]) -> Void
    }

    private struct State {
        var descriptor: Int32 = -1
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
                do throws(NetlinkError) {
                    try startThread(name: "inotify") { [self] in
                        while true { deliver(descriptor) }
                    }
                } catch {
                    close(descriptor)
                    throw error
                }
                state.descriptor = descriptor
            }
            var watched: [Int32: String] = [:]
            var failure: Int32 = 0
            for directory in Set(directories) {
                let wd = inotify_add_watch(state.descriptor, directory, mask | UInt32(IN_MASK_ADD))
                if wd < 0 { failure = errno; continue }
                watched[wd] = directory
            }
            guard !watched.isEmpty else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: failure,
                                   context: "inotify_add_watch \(directories.joined(separator: ", "))")
            }
            state.nextID += 1
            state.watchers[state.nextID] = Watcher(directories: watched, mask: mask, handler: handler)
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

    /// Stops calling the watcher's handler (one running now may finish).
    package func cancel(_ token: Token) {
        _ = state.withLock { $0.watchers.removeValue(forKey: token.id) }
    }

    /// Waits for events, then hands each watcher the names touched in its directories.
    private func deliver(_ descriptor: Int32) {
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
            let watchers = Array(state.watchers.values)
            // The kernel dropped these watches (their directories went; what it said about them
            // before is still told below): a directory made again under the same name is another
            // watch (see ``add(_:to:)``).
            for wd in ignored {
                for id in state.watchers.keys { state.watchers[id]!.directories[wd] = nil }
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
