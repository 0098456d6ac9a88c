import CAres
import Glibc
import Netlink

/// A name lookup with the name servers, search domains and options of a given `resolv.conf`,
/// through c-ares: what `getaddrinfo(3)` would answer inside `ip netns exec NAME`, where the
/// namespace's `/etc/netns/NAME/resolv.conf` is mounted over `/etc/resolv.conf`. glibc reads
/// only the process's own file, so a lookup for a namespace with a file of its own cannot use it.
///
/// The lookup blocks its thread until c-ares answers or gives up (the file's `timeout` and
/// `attempts`), and makes its sockets on that thread: run it inside the namespace
/// (``NetworkNamespace/perform(_:)``) and its queries leave through the namespace's links.
enum ResolverFileLookup {
    /// The addresses of `host`, IPv4 and IPv6, in c-ares's order (RFC 6724's); empty when the
    /// name does not exist or has no address.
    /// - Parameters:
    ///   - path: The `resolv.conf` to read.
    ///   - readsHostsFile: Whether `/etc/hosts` is asked before the name servers, as it is inside
    ///     `ip netns exec` unless the namespace has a hosts file of its own, which replaces it.
    static func addresses(of host: String, resolverFile path: String,
                          readsHostsFile: Bool) -> Result<[ResolvedAddress], ReachabilityError> {
        initializeLibrary
        var channel: ares_channel?
        var options = ares_options()
        let initialized = path.withCString { path in
            (readsHostsFile ? "fb" : "b").withCString { lookups in
                options.resolvconf_path = UnsafeMutablePointer(mutating: path)
                options.lookups = UnsafeMutablePointer(mutating: lookups)
                return ares_init_options(&channel, &options, ARES_OPT_RESOLVCONF | ARES_OPT_LOOKUPS)
            }
        }
        guard initialized == ARES_SUCCESS, let channel else {
            return .failure(failure(host, initialized, reading: path))
        }
        defer { ares_destroy(channel) }
        let outcome = Outcome()
        var hints = ares_addrinfo_hints()
        hints.ai_family = AF_UNSPEC
        ares_getaddrinfo(channel, host, nil, &hints, { context, status, _, result in
            let outcome = Unmanaged<Outcome>.fromOpaque(context!).takeUnretainedValue()
            outcome.status = status
            defer { if let result { ares_freeaddrinfo(result) } }
            var node = result?.pointee.nodes
            while let entry = node?.pointee {
                if let address = entry.ai_addr.flatMap(ResolvedAddress.init(sockaddr:)), !outcome.addresses.contains(address) {
                    outcome.addresses.append(address)
                }
                node = entry.ai_next
            }
        }, Unmanaged.passUnretained(outcome).toOpaque())
        while outcome.status == nil {
            guard wait(on: channel) else {
                // Nothing to wait for (no socket, no timeout) or poll(2) failed: c-ares cannot
                // finish; its channel is destroyed, which ends the lookup.
                return .failure(.resolutionFailed(host: host, message: "the lookup stalled (\(String(cString: strerror(errno))))"))
            }
        }
        withExtendedLifetime(outcome) {}
        switch outcome.status {
        case ARES_SUCCESS?: return .success(outcome.addresses)
        case ARES_ENOTFOUND?, ARES_ENODATA?: return .success([])
        case let status?: return .failure(failure(host, status, reading: path))
        case nil: return .success([])
        }
    }

    /// What the lookup's callback leaves behind; c-ares calls it on the thread that drives the
    /// channel, so it needs no lock.
    private final class Outcome {
        var status: Int32?
        var addresses: [ResolvedAddress] = []
    }

    /// Waits for the channel's sockets or its next timeout and lets c-ares process what came;
    /// false when there is nothing to wait for or `poll(2)` fails.
    private static func wait(on channel: ares_channel) -> Bool {
        let slots = Int(ARES_GETSOCK_MAXNUM)
        var sockets = [ares_socket_t](repeating: ARES_SOCKET_BAD, count: slots)
        let bits = ares_getsock(channel, &sockets, Int32(slots))
        var descriptors: [pollfd] = []
        for slot in 0..<slots {
            let readable = bits & (1 << slot) != 0
            let writable = bits & (1 << (slot + slots)) != 0
            guard readable || writable else { break }
            descriptors.append(pollfd(fd: sockets[slot],
                                      events: Int16((readable ? POLLIN : 0) | (writable ? POLLOUT : 0)), revents: 0))
        }
        var interval = timeval()
        let milliseconds: Int32
        if let next = ares_timeout(channel, nil, &interval) {
            milliseconds = Int32(clamping: next.pointee.tv_sec * 1000 + Int(next.pointee.tv_usec + 999) / 1000)
        } else {
            guard !descriptors.isEmpty else { return false }
            milliseconds = -1
        }
        let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        if ready < 0 { return errno == EINTR }  // EINTR: look again
        if ready == 0 {
            ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD)  // timeouts and retries
            return true
        }
        for descriptor in descriptors where descriptor.revents != 0 {
            let readable = descriptor.revents & Int16(POLLIN | POLLERR | POLLHUP) != 0
            let writable = descriptor.revents & Int16(POLLOUT) != 0
            ares_process_fd(channel, readable ? descriptor.fd : ARES_SOCKET_BAD, writable ? descriptor.fd : ARES_SOCKET_BAD)
        }
        return true
    }

    private static func failure(_ host: String, _ status: Int32, reading path: String) -> ReachabilityError {
        .resolutionFailed(host: host, message: "\(String(cString: ares_strerror(status))) (name servers of \(path))")
    }

    /// c-ares's global state, set up once per process (a no-op on Linux in current versions,
    /// but the documented first call).
    private static let initializeLibrary: Void = {
        _ = ares_library_init(ARES_LIB_INIT_ALL)
    }()
}
