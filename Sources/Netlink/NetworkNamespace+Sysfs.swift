import CNetlink
import Glibc

extension NetworkNamespace {
    /// Runs `body` with a sysfs tree that shows this namespace's links, and returns its result.
    ///
    /// `/sys/class/net` lists the links of the network namespace that *mounted* that sysfs, not
    /// of the reader, so a process in the root namespace cannot read the sysfs facts of a link
    /// in another namespace through its own `/sys`: it sees the root namespace's link of the
    /// same name, or none. For ``current`` this passes `"/sys"` and runs inline. For any other
    /// namespace it runs `body` on a dedicated thread that has its own mount namespace (every
    /// mount a slave of the host's, so nothing propagates back), joins this network namespace
    /// and mounts a fresh read-only sysfs over `/sys`, as `ip netns exec` does. The mount
    /// namespace ends with the thread. Needs `CAP_SYS_ADMIN`. To read such a tree many times,
    /// ``openSysfs()`` mounts it once.
    ///
    /// - Parameter body: Reads sysfs below the path it is given. It runs on another thread
    ///   for a namespace other than ``current``; it must not rely on thread-local state.
    /// - Throws: `NetlinkError.namespaceNotFound` and the other namespace errors of
    ///   opening the namespace, `NetlinkError.namespacePermissionDenied` without
    ///   `CAP_SYS_ADMIN`, or a `NetlinkError` whose `systemErrno` and `context` name the
    ///   step (`unshare`, `mount`, `setns`) that failed.
    package func withSysfs<T>(_ body: @escaping @Sendable (_ sysfsRoot: String) -> T) throws(NetlinkError) -> T {
        if isCurrent { return body("/sys") }
        return try inSysfsView { () throws(NetlinkError) in body("/sys") }
    }

    /// Opens a sysfs tree that shows this namespace's links and keeps it open, for reads with
    /// `openat` from any thread (`SysfsDirectory`).
    ///
    /// For ``current`` it opens `/sys`. For any other namespace it mounts a fresh read-only
    /// sysfs as ``withSysfs(_:)`` does, on a dedicated thread, opens its root, and lets the
    /// thread and its mount namespace end: the open directory keeps that one mount alive
    /// (detached, as after `umount -l`) and it goes with the directory. Unlike a path, the
    /// directory keeps showing this namespace's links as they come, go and change names; once
    /// the namespace is gone it lists none. So a reader that looks at a few links at a time,
    /// often, pays for the mount once instead of a thread and two mounts each time. Needs
    /// `CAP_SYS_ADMIN` for a namespace other than ``current``. The open tree does not keep the
    /// namespace alive (its links go when it is deleted), but it pins the kernel's record of it
    /// (a few KiB) and the sysfs superblock until the directory is released.
    /// - Throws: The errors of ``withSysfs(_:)``, or a `NetlinkError` whose `context` says
    ///   that the mounted root could not be opened.
    package func openSysfs() throws(NetlinkError) -> SysfsDirectory {
        let target = try openDescriptor()
        defer { close(target) }
        let identity = try identity(of: target)
        let description = self.description
        let open: @Sendable () throws(NetlinkError) -> Int32 = { () throws(NetlinkError) -> Int32 in
            let descriptor = DescriptorCreation.serialized { Glibc.open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
            guard descriptor >= 0 else {
                throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno,
                                   context: "open the sysfs view of \(description)")
            }
            return descriptor
        }
        let descriptor = isCurrent ? try open() : try inSysfsView(of: target, open)
        return SysfsDirectory(descriptor: descriptor, namespace: self, identity: identity)
    }

    /// Runs `body` on a dedicated thread whose `/sys` shows this namespace (opened here).
    private func inSysfsView<T>(_ body: @escaping @Sendable () throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        let target = try openDescriptor()
        defer { close(target) }
        return try inSysfsView(of: target, body)
    }

    /// Runs `body` on a dedicated thread with its own mount namespace, joined to the network
    /// namespace `target` (a descriptor of this namespace) and a fresh sysfs over `/sys`.
    private func inSysfsView<T>(of target: Int32, _ body: @escaping @Sendable () throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        let outcome = UnsafeTransfer<Result<T, NetlinkError>?>(nil)
        let description = self.description
        try runOnDedicatedThread(name: "sysfs \(description)") {
            var saved: Int32 = 0
            let step = cnetlink_enter_namespace_sysfs(target, &saved)
            if step == 0 {
                do throws(NetlinkError) {
                    outcome.value = .success(try body())
                } catch {
                    outcome.value = .failure(error)
                }
                return
            }
            let steps = ["unshare(CLONE_NEWNS)", "make mounts slaves", "setns \(description)", "mount sysfs"]
            if saved == EPERM {
                let calls = ["unshare(CLONE_NEWNS)", "mount(MS_REC|MS_SLAVE)", "setns", "mount(sysfs)"]
                outcome.value = .failure(NetlinkError(
                    code: NetlinkError.namespacePermissionDenied.code, systemErrno: saved, context: calls[Int(step) - 1],
                    explanation: "reading the sysfs of network namespace \(quoted(description)) needs CAP_SYS_ADMIN"))
                return
            }
            let base: NetlinkError = step == 3 && saved == EINVAL ? .notANetworkNamespace : .failure
            outcome.value = .failure(NetlinkError(code: base.code, systemErrno: saved,
                                                  context: "sysfs view of \(description): \(steps[Int(step) - 1])"))
        }
        return try outcome.value!.get()
    }
}

/// An open sysfs tree that shows one network namespace's links (`NetworkNamespace.openSysfs()`):
/// its root directory, read with `openat` relative to ``descriptor`` (`class/net/NAME/...`),
/// from any thread. The descriptor is closed when the last reference goes.
package final class SysfsDirectory: Sendable, Hashable, CustomStringConvertible {
    /// The root directory of the tree (a read-only descriptor), which plays the role of `/sys`.
    /// Valid while this object lives; do not close it.
    package let descriptor: Int32
    /// The namespace whose links the tree shows.
    package let namespace: NetworkNamespace
    /// That namespace's identity when the tree was opened. A namespace made later under the
    /// same name may have the same identity (the kernel reuses inode numbers): ``shows(_:)``
    /// checks the tree too.
    package let identity: NetworkNamespace.Identity

    init(descriptor: Int32, namespace: NetworkNamespace, identity: NetworkNamespace.Identity) {
        self.descriptor = descriptor
        self.namespace = namespace
        self.identity = identity
    }

    deinit { close(descriptor) }

    /// Whether this tree still shows `namespace` as it is now: the namespace has the identity
    /// the tree was opened for, and the tree lists a link. False when the namespace is gone or
    /// its name leads to another namespace. The identity alone cannot tell: the kernel reuses a
    /// deleted namespace's inode number, often for the next namespace made (`ip netns del X;
    /// ip netns add X`). A live namespace always has its loopback link (renamed, perhaps), and
    /// a tree of a deleted one lists nothing. Costs a few system calls.
    package func shows(_ namespace: NetworkNamespace) -> Bool {
        guard (try? namespace.identity()) == identity else { return false }
        let links = openat(descriptor, "class/net", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC)
        guard links >= 0, let listing = fdopendir(links) else {
            if links >= 0 { close(links) }
            return false
        }
        defer { closedir(listing) }
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            if name != [0x2E] && name != [0x2E, 0x2E] { return true }
        }
        return false
    }

    /// "sysfs of NAME", for messages.
    package var description: String { "sysfs of \(namespace.description)" }

    /// Two trees are equal when they are the same open tree (one mount, one descriptor).
    package static func == (lhs: SysfsDirectory, rhs: SysfsDirectory) -> Bool { lhs === rhs }

    /// Hashes the tree's identity as an object, as ``==(_:_:)`` compares it.
    package func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
