import Dispatch
import Foundation
import Glibc
import Netlink

/// Tells when a namespace's resolver configuration may have changed: a path's
/// ``NetworkPath/supportsDNS`` depends on the name servers of `resolv.conf`, which change
/// without a kernel message (a DHCP client or systemd-resolved rewrites the file).
///
/// inotify watches the directories of the files ``NameServers/configured(for:)`` reads (`/etc`,
/// `/etc/netns/NAME` for a named namespace, and the directory that `/etc/resolv.conf` links
/// to, such as systemd-resolved's `/run/systemd/resolve`), for files written, moved in or out,
/// created or deleted, as editors and resolvers replace the file by a rename. A dispatch read
/// source on the inotify descriptor calls `changed` on `queue` when one of those names is
/// touched; nothing runs while nothing changes.
final class ResolverConfigurationWatch: Sendable {
    private let descriptor: Int32
    // A dispatch source is safe to use from any thread; it is only resumed here and cancelled.
    private nonisolated(unsafe) let source: any DispatchSourceRead

    /// Watches the resolver configuration of `namespace`; nil when inotify is not available.
    init?(namespace: NetworkNamespace, queue: DispatchQueue, changed: @escaping @Sendable () -> Void) {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        var names: Set<String> = ["resolv.conf"]
        var directories = ["/etc"]
        if let name = namespace.name { directories.append("/etc/netns/\(name)") }
        // The file a systemd-resolved or resolvconf link points to, in a directory of its own.
        let target = URL(fileURLWithPath: "/etc/resolv.conf").resolvingSymlinksInPath()
        directories.append(target.deletingLastPathComponent().path)
        names.insert(target.lastPathComponent)
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)
        var watched = 0
        for directory in Set(directories) where inotify_add_watch(descriptor, directory, mask) >= 0 { watched += 1 }
        guard watched > 0 else {
            close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        let watchedNames = names
        source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler {
            if Self.readEvents(descriptor).contains(where: watchedNames.contains) { changed() }
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
    }

    deinit { source.cancel() }

    /// The names in the events waiting on `descriptor` (each `struct inotify_event` is followed
    /// by its name, padded with NULs).
    private static func readEvents(_ descriptor: Int32) -> [String] {
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { return names }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let length = buffer.withUnsafeBytes { Int($0.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self)) }
                let start = offset + header
                let end = min(start + length, count)
                let name = buffer[start..<end].prefix { $0 != 0 }
                if !name.isEmpty { names.append(String(decoding: name, as: UTF8.self)) }
                offset = start + length
            }
        }
    }
}
