import CNetlink
import Dispatch
import Glibc

/// A network namespace that the library reads and watches.
///
/// `.current` is the namespace of the calling process. A name means `/run/netns/NAME`, as
/// `ip -n NAME` does; a path (such as `/proc/1234/ns/net`) is used as is. Sockets for another
/// namespace are opened on a dedicated thread that enters it (`setns`) and comes back, so the
/// caller's threads never change namespace, and the sockets keep working in the namespace.
/// Entering another namespace needs `CAP_SYS_ADMIN`; the current one needs no privilege.
public struct NetworkNamespace: Sendable, Hashable, CustomStringConvertible {
    /// The namespace file, or nil for the current namespace.
    public let path: String?
    /// The name, when the namespace was given by name.
    public let name: String?

    private init(path: String?, name: String?) {
        self.path = path
        self.name = name
    }

    /// The namespace of the calling process.
    public static let current = NetworkNamespace(path: nil, name: nil)

    /// The directory where `ip netns` keeps named namespaces.
    public static let namedNamespaceDirectory = "/run/netns"

    /// A namespace by name, as `/run/netns/NAME`.
    ///
    /// - Throws: `NetlinkError.invalidNamespaceName` for an empty or over-long name (more than
    ///   255 bytes), `.`, `..`, or a name with `/` or NUL in it.
    public static func named(_ name: String) throws(NetlinkError) -> NetworkNamespace {
        guard !name.isEmpty, name.utf8.count <= 255, name != ".", name != "..",
              !name.utf8.contains(UInt8(ascii: "/")), !name.utf8.contains(0) else {
            throw NetlinkError(code: NetlinkError.invalidNamespaceName.code,
                               context: "namespace name \(quoted(name))")
        }
        return NetworkNamespace(path: "\(namedNamespaceDirectory)/\(name)", name: name)
    }

    /// A namespace by the path of its file (a bind mount made by `ip netns add`, or
    /// `/proc/PID/ns/net`).
    ///
    /// - Throws: `NetlinkError.invalidNamespaceName` for an empty or over-long path
    ///   (`PATH_MAX`) or one with NUL in it.
    public static func path(_ path: String) throws(NetlinkError) -> NetworkNamespace {
        guard !path.isEmpty, path.utf8.count < Int(PATH_MAX), !path.utf8.contains(0) else {
            throw NetlinkError(code: NetlinkError.invalidNamespaceName.code,
                               context: "namespace path \(quoted(path))")
        }
        return NetworkNamespace(path: path, name: nil)
    }

    /// Parses the command-line form: a value with `/` in it is a path, anything else a name.
    public static func parse(_ text: String) throws(NetlinkError) -> NetworkNamespace {
        text.contains("/") ? try path(text) : try named(text)
    }

    /// True for ``current``.
    public var isCurrent: Bool { path == nil }

    /// The process whose namespace this is, for a path of the form `/proc/PID/ns/net` or
    /// `/proc/PID/task/TID/ns/net` (the namespace ends for the library when that process exits,
    /// as `/proc` then no longer shows it); nil otherwise.
    var owningProcess: pid_t? {
        guard let path else { return nil }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.first == "proc", parts.count >= 4, parts.suffix(2) == ["ns", "net"],
              parts.count == 4 || (parts.count == 6 && parts[2] == "task") else { return nil }
        return pid_t(parts[parts.count == 4 ? 1 : 3])
    }

    public var description: String { (name ?? path).map(displayed) ?? "current" }

    /// Opens the namespace file and checks that it is a network namespace.
    /// The caller owns the returned descriptor.
    func openDescriptor() throws(NetlinkError) -> Int32 {
        let file = path ?? "/proc/thread-self/ns/net"
        // Non-blocking: a FIFO put where a namespace should be would wait for a writer forever.
        let (fd, code) = DescriptorCreation.serialized { (open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK), errno) }
        if fd < 0 {
            if code == EACCES || code == EPERM {
                // File permissions, or for /proc/PID/ns/net the ptrace access check, refused it.
                let needs = file.hasPrefix("/proc/") ? "CAP_SYS_PTRACE or the process's own user"
                    : "read permission on \(file) or CAP_DAC_READ_SEARCH"
                throw NetlinkError(code: NetlinkError.namespacePermissionDenied.code, systemErrno: code,
                                   context: "open \(displayed(file))",
                                   explanation: "opening network namespace \(quoted(description)) needs \(needs)")
            }
            let base: NetlinkError = code == ENOENT || code == ENOTDIR ? .namespaceNotFound : .failure
            throw NetlinkError(code: base.code, systemErrno: code, context: "open \(displayed(file))")
        }
        var fs = statfs()
        if fstatfs(fd, &fs) != 0 || UInt(bitPattern: Int(fs.f_type)) != cnetlink_nsfs_magic() {
            close(fd)
            throw NetlinkError(code: NetlinkError.notANetworkNamespace.code, context: displayed(file))
        }
        return fd
    }

    /// The identity of the namespace: the device and inode of its nsfs file. Two values that
    /// name the same namespace (a name and `/proc/PID/ns/net`, say) have the same identity.
    package func identity() throws(NetlinkError) -> Identity {
        let fd = try openDescriptor()
        defer { close(fd) }
        return try identity(of: fd)
    }

    /// The identity of the namespace open at `descriptor` (from ``openDescriptor()``).
    func identity(of descriptor: Int32) throws(NetlinkError) -> Identity {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "fstat \(self)")
        }
        return Identity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }

    /// The identity of a network namespace (nsfs device and inode).
    package struct Identity: Sendable, Hashable {
        /// The device of the nsfs file.
        package var device: UInt64
        /// The inode number, which `ip netns identify` and `lsns` show.
        package var inode: UInt64
    }

    /// Runs `body` with the calling thread's network namespace switched to this one, on a
    /// dedicated thread that returns to its own namespace afterwards; inline for ``current``.
    /// Sockets that `body` opens belong to this namespace for their whole life (a DNS lookup
    /// made in `body` goes out through this namespace's links). Blocks the caller until `body`
    /// returns; call it off the cooperative thread pool.
    /// - Throws: The namespace errors of opening and entering it, or what `body` throws.
    public func perform<T>(_ body: @escaping @Sendable () throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        if isCurrent { return try body() }
        let target = try openDescriptor()
        defer { close(target) }
        return try Self.perform(in: target, description: description, body)
    }

    /// Runs `body` on a short-lived thread inside the namespace behind the descriptor `target`
    /// (kept open by the caller), as ``perform(_:)`` does with a namespace it opens by path.
    static func perform<T>(in target: Int32, description: String,
                           _ body: @escaping @Sendable () throws(NetlinkError) -> T) throws(NetlinkError) -> T {
        let outcome = UnsafeTransfer<Result<T, NetlinkError>?>(nil)
        try runOnDedicatedThread(name: "netns \(description)") {
            outcome.value = Result { () throws(NetlinkError) -> T in
                try Self.enter(target, description: description)
                return try body()
            }
        }
        return try outcome.value!.get()
    }

    /// Joins the calling thread to the namespace behind `fd`.
    static func enter(_ fd: Int32, description: String) throws(NetlinkError) {
        var saved: Int32 = 0
        if cnetlink_setns_net(fd, &saved) != 0 {
            if saved == EPERM {
                throw NetlinkError(code: NetlinkError.namespacePermissionDenied.code, systemErrno: saved, context: "setns",
                                   explanation: "entering network namespace \(quoted(description)) needs CAP_SYS_ADMIN")
            }
            let base: NetlinkError = saved == EINVAL ? .notANetworkNamespace : .failure
            throw NetlinkError(code: base.code, systemErrno: saved, context: "setns \(description)")
        }
    }
}

/// A value handed from one thread to another while the first waits for the second.
///
/// `@unchecked Sendable` because the handing over is ordered: the creating thread does not touch
/// `value` until the thread that writes it has signalled, after its last access, a semaphore or
/// condition that the creator waits on (`runOnDedicatedThread`, `SubscriptionEngine.start`).
final class UnsafeTransfer<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Runs `body` on a new thread and waits until it has returned.
/// - Throws: The error of ``startThread(name:_:)``; `body` has not run then.
func runOnDedicatedThread(name: String, _ body: @escaping @Sendable () -> Void) throws(NetlinkError) {
    let done = DispatchSemaphore(value: 0)
    try startThread(name: name) {
        body()
        done.signal()
    }
    done.wait()
}

/// Starts a detached POSIX thread running `body`.
/// - Throws: A `NetlinkError` with `pthread_create`'s error (`EAGAIN` at the process's or
///   user's limit of threads); `body` is released without running.
func startThread(name: String, _ body: @escaping @Sendable () -> Void) throws(NetlinkError) {
    final class Box { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    let context = Unmanaged.passRetained(Box {
        cnetlink_set_thread_name(String(name.utf8.prefix(15)) ?? "netlink")
        body()
    }).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let rc = pthread_create(&thread, &attributes, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, context)
    pthread_attr_destroy(&attributes)
    if rc != 0 {
        Unmanaged<AnyObject>.fromOpaque(context).release()
        throw NetlinkError(code: NetlinkError.failure.code, systemErrno: rc, context: "start a thread (\(name))")
    }
}
