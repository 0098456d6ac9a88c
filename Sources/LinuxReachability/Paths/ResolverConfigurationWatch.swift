import Dispatch
import Glibc
import Netlink

/// Tells when a namespace's resolver configuration may have changed: a path's
/// ``NetworkPath/supportsDNS`` depends on the name servers of `resolv.conf`, which change
/// without a kernel message (a DHCP client or systemd-resolved rewrites the file).
///
/// The process's shared inotify instance (`DirectoryWatch`) watches the directories of the
/// files ``NameServers/configured(for:)`` reads (`/etc`, `/etc/netns/NAME` for a named
/// namespace, and the directory that `/etc/resolv.conf` links to, such as systemd-resolved's
/// `/run/systemd/resolve`), for files written, moved in or out, created or deleted, as editors
/// and resolvers replace the file by a rename; `changed` runs on `queue` when one of those
/// names is touched. A namespace's directory made after the watch started (`mkdir -p
/// /etc/netns/NAME`, then its `resolv.conf`) is watched from when it appears: `/etc` and
/// `/etc/netns` are watched for it. Nothing runs while nothing changes.
final class ResolverConfigurationWatch: Sendable {
    private let token: DirectoryWatch.Token

    /// Watches the resolver configuration of `namespace`; nil when inotify is not available.
    init?(namespace: NetworkNamespace, queue: DispatchQueue, changed: @escaping @Sendable () -> Void) {
        var names: Set<String> = ["resolv.conf"]
        var directories = ["/etc"]
        // The namespace's own directory, and where it appears from.
        let appearing = namespace.ownConfiguration.map { [NetworkNamespace.ownConfigurations, $0] } ?? []
        directories += appearing
        // The file a systemd-resolved or resolvconf link points to, in a directory of its own.
        let target = FileContents.resolvingSymbolicLinks("/etc/resolv.conf")
        let slash = target.lastIndex(of: "/") ?? target.startIndex
        directories.append(slash == target.startIndex ? "/" : String(target[..<slash]))
        names.insert(String(target[target.index(after: slash)...]))
        let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE)
        let watchedNames = names
        let ownName = namespace.name
        let madeToken = Locked<DirectoryWatch.Token?>(nil)
        guard let token = try? DirectoryWatch.shared.watch(directories, mask: mask, handler: { directory, touched in
            // `/etc/netns` or the namespace's directory itself appeared: watch them.
            let appeared = directory == "/etc" && touched.contains("netns")
                || directory == NetworkNamespace.ownConfigurations && touched.contains { $0 == ownName }
            if appeared || touched.isEmpty, let token = madeToken.withLock({ $0 }) {
                DirectoryWatch.shared.add(appearing, to: token)
            }
            // No names: the kernel's event queue overflowed, and the file may have changed.
            if appeared || touched.isEmpty || touched.contains(where: watchedNames.contains) { queue.async { changed() } }
        }) else { return nil }
        madeToken.withLock { $0 = token }
        // Those that appeared before the handler could know the token.
        DirectoryWatch.shared.add(appearing, to: token)
        self.token = token
    }

    deinit { DirectoryWatch.shared.cancel(token) }
}
