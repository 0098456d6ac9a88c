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
    /// namespace ends with the thread. Needs `CAP_SYS_ADMIN`.
    ///
    /// - Parameter body: Reads sysfs below the path it is given. It runs on another thread
    ///   for a namespace other than ``current``; it must not rely on thread-local state.
    /// - Throws: ``NetlinkError/namespaceNotFound`` and the other namespace errors of
    ///   opening the namespace, ``NetlinkError/namespacePermissionDenied`` without
    ///   `CAP_SYS_ADMIN`, or a ``NetlinkError`` whose `systemErrno` and `context` name the
    ///   step (`unshare`, `mount`, `setns`) that failed.
    public func withSysfs<T>(_ body: @escaping @Sendable (_ sysfsRoot: String) -> T) throws(NetlinkError) -> T {
        if isCurrent { return body("/sys") }
        let target = try openDescriptor()
        defer { close(target) }
        let outcome = UnsafeTransfer<Result<T, NetlinkError>?>(nil)
        let description = self.description
        try runOnDedicatedThread(name: "sysfs \(description)") {
            var saved: Int32 = 0
            let step = cnetlink_enter_namespace_sysfs(target, &saved)
            if step == 0 {
                outcome.value = .success(body("/sys"))
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
