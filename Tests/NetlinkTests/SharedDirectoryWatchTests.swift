import Foundation
import Glibc
@testable import Netlink
import NetnsTestSupport
import Testing

/// The subscriptions of named namespaces share the process's one inotify instance: a user has
/// 128 by default, and one per subscription ran out at the 129th namespace followed (after which
/// a deletion went unnoticed). Each still ends when its own namespace is deleted.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct SharedDirectoryWatchTests {
    /// The inotify instances this process holds.
    private func inotifyInstances() -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == "anon_inode:inotify" }.count
    }

    @Test func twoSpellingsOfOneDirectoryAreBothTold() throws {
        // The kernel keys a watch by inode: /var/run/netns and /run/netns share one.
        let base = NSTemporaryDirectory() + "directory-watch-\(getpid())"
        try FileManager.default.createDirectory(atPath: base + "/real", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        try FileManager.default.createSymbolicLink(atPath: base + "/alias", withDestinationPath: base + "/real")
        let told = Locked<[String]>([])
        let alias = try DirectoryWatch.shared.watch([base + "/alias"], mask: UInt32(IN_CREATE)) { directory, _ in
            told.withLock { $0.append(directory) }
        }
        let real = try DirectoryWatch.shared.watch([base + "/real"], mask: UInt32(IN_CREATE)) { directory, _ in
            told.withLock { $0.append(directory) }
        }
        defer { DirectoryWatch.shared.cancel(alias); DirectoryWatch.shared.cancel(real) }
        #expect(FileManager.default.createFile(atPath: base + "/real/file", contents: nil))
        #expect(eventually { Set(told.withLock { $0 }) == [base + "/alias", base + "/real"] }, "\(told.withLock { $0 })")
    }

    @Test func namespacesFollowedShareOneInotifyInstanceAndEachEndsAlone() throws {
        let namespaces = try (0..<4).map { try TestNamespace("inotify\($0)") }
        defer { for ns in namespaces { ns.delete() } }
        let subscriptions = try namespaces.map { try NetlinkSubscription(namespace: .named($0.name)) }
        let before = inotifyInstances()
        let more = try namespaces.map { try NetlinkSubscription(namespace: .named($0.name)) }
        #expect(inotifyInstances() == before, "four more subscriptions, no more inotify instances")
        #expect(before <= 2, "the shared instance (and one a test suite running beside may hold): \(before)")
        namespaces[1].delete()
        #expect(eventually { subscriptions[1].termination == .namespaceDeleted && more[1].termination == .namespaceDeleted })
        for index in [0, 2, 3] { #expect(subscriptions[index].termination == nil && more[index].termination == nil) }
        namespaces[3].delete()
        #expect(eventually { subscriptions[3].termination == .namespaceDeleted })
        #expect(subscriptions[0].termination == nil && subscriptions[2].termination == nil)
    }
}
