import Foundation

/// Which network namespace a namespace file names: the device and inode of its nsfs file,
/// which stay the namespace's while anything (a socket, say) keeps it alive, even after
/// `ip netns del` removed the file.
public struct NamespaceIdentity: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64

    /// The identity of the namespace file at `path`, or `nil` if it cannot be read.
    public init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// The sockets this process holds in this namespace.
    ///
    /// Each open descriptor is asked for its socket's network namespace (`SIOCGSKNS`), which is
    /// compared with this one. Counting only these keeps the check exact while other tests open
    /// and close descriptors of their own in parallel.
    public func socketsHeld() -> Int {
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return -1 }
        let SIOCGSKNS: UInt = 0x894C
        return descriptors.compactMap { Int32($0) }.filter { descriptor in
            let namespace = ioctl(descriptor, SIOCGSKNS)
            guard namespace >= 0 else { return false }
            defer { close(namespace) }
            var found = stat()
            return fstat(namespace, &found) == 0 && UInt64(found.st_dev) == device && UInt64(found.st_ino) == inode
        }.count
    }
}
