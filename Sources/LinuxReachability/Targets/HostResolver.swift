import Synchronization
import Dispatch
import Glibc
import Netlink

/// Turns a host name into addresses. Inject one into the monitors and the probe, to resolve
/// from a source of your own or, in tests, from a table, so that nothing asks a DNS server.
public protocol HostResolver: Sendable {
    /// The addresses of `host`, in the resolver's order of preference; empty when it has none.
    /// - Throws: ``ReachabilityError/resolutionFailed(host:message:)`` when resolution fails.
    func resolve(_ host: String) async throws -> [IPAddress]

    /// The addresses of `host` with the link each one is scoped to, where the resolver knows
    /// one: mDNS answers a `.local` name with IPv6 link-local addresses heard on a given link
    /// (`getaddrinfo`'s `sin6_scope_id`), which a socket reaches only through that link. The
    /// monitors and the probe ask this; the default is ``resolve(_:)``'s addresses, unscoped
    /// (a link-local one is then not reachable: ``UnreachableReason/scopeRequired``).
    /// - Throws: ``ReachabilityError/resolutionFailed(host:message:)`` when resolution fails.
    func resolveScoped(_ host: String) async throws -> [ResolvedAddress]
}

extension HostResolver {
    public func resolveScoped(_ host: String) async throws -> [ResolvedAddress] {
        try await resolve(host).map { ResolvedAddress($0) }
    }
}

/// An address a resolver found for a host name, with the link it is scoped to, if any.
public struct ResolvedAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address.
    public var address: IPAddress
    /// The link a socket reaches `address` through (its `sin6_scope_id`): a link's name, or its
    /// index in decimal; nil for an address without a scope. Only an IPv6 link-local address
    /// needs one; see ``ReachabilityTarget/scopedAddress(_:interface:)``.
    public var interface: String?

    /// `address`, scoped to `interface` if one is given.
    public init(_ address: IPAddress, interface: String? = nil) {
        self.address = address
        self.interface = interface
    }

    /// Such as `192.0.2.1` or `fe80::1%eth0`.
    public var description: String { interface.map { "\(address)%\($0)" } ?? "\(address)" }
}

extension [ResolvedAddress] {
    /// The addresses alone, each once, in order.
    package var addresses: [IPAddress] {
        var result: [IPAddress] = []
        for resolved in self where !result.contains(resolved.address) { result.append(resolved.address) }
        return result
    }
}

/// The system's resolver, run off the caller's thread, inside a network namespace, so that a
/// query leaves through that namespace's links: what `getaddrinfo(3)` answers inside
/// `ip netns exec NAME` with `hosts: files dns` (c-ares, used for a namespace's own
/// `resolv.conf`, asks no other NSS module).
///
/// A named namespace's own files come first, as `ip netns exec` mounts them over `/etc`:
/// - with a hosts file of its own, `/etc/netns/NAME/hosts`, a name found there is answered from
///   it;
/// - with a resolver configuration of its own, `/etc/netns/NAME/resolv.conf`, other names go to
///   its name servers, with its search domains and options, through c-ares (glibc reads only
///   the process's `/etc/resolv.conf`); `/etc/hosts` is asked first unless the namespace has
///   a hosts file of its own, which replaces it.
///
/// Otherwise, and for the current namespace or one opened by path, the lookup is
/// `getaddrinfo(3)` with the process's own `/etc/resolv.conf`, run inside the namespace (for a
/// namespace with a hosts file of its own but no `resolv.conf`, glibc then reads the machine's
/// `/etc/hosts` as well).
package struct SystemHostResolver: HostResolver {
    /// The namespace the lookup runs in.
    package var namespace: NetworkNamespace

    /// A resolver for `namespace` (default: the current one).
    package init(namespace: NetworkNamespace = .current) {
        self.namespace = namespace
    }

    package func resolve(_ host: String) async throws -> [IPAddress] {
        try await resolveScoped(host).addresses
    }

    /// The addresses with their links: an IPv6 link-local address that `getaddrinfo` or c-ares
    /// answers with a `sin6_scope_id` (mDNS's, or a literal such as `fe80::1%eth0`) is scoped to
    /// that link, named as it is in the namespace (its index in decimal if it has gone since).
    package func resolveScoped(_ host: String) async throws -> [ResolvedAddress] {
        try await withCheckedThrowingContinuation { continuation in
            BlockingLanes.resolution.next().async {
                continuation.resume(with: Result { () throws(ReachabilityError) in try resolveScopedBlocking(host) })
            }
        }
    }

    /// ``resolveScoped(_:)`` on the calling thread, which it blocks for the lookup: for a caller
    /// that runs off Swift's cooperative pool already.
    package func resolveScopedBlocking(_ host: String) throws(ReachabilityError) -> [ResolvedAddress] {
        var resolverFile: String?
        var hasHostsFile = false
        if let own = namespace.ownConfiguration {
            let hostsPath = own + "/hosts"
            hasHostsFile = access(hostsPath, F_OK) == 0
            if hasHostsFile, let found = HostsFileIndex.addresses(of: host, inFileAt: hostsPath), !found.isEmpty {
                return found.map { ResolvedAddress($0) }
            }
            let resolverPath = own + "/resolv.conf"
            if access(resolverPath, F_OK) == 0 { resolverFile = resolverPath }
        }
        let result: Result<[ResolvedAddress], ReachabilityError>
        do {
            result = try namespace.perform { [resolverFile, hasHostsFile] () -> Result<[ResolvedAddress], ReachabilityError> in
                if let resolverFile {
                    return ResolverFileLookup.addresses(of: host, resolverFile: resolverFile, readsHostsFile: !hasHostsFile)
                }
                return Self.getaddrinfo(host)
            }
        } catch {
            throw .netlink(error)
        }
        return try result.get()
    }

    /// `getaddrinfo(3)` in the calling thread's namespace.
    static func getaddrinfo(_ host: String) -> Result<[ResolvedAddress], ReachabilityError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = Glibc.getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        if rc == EAI_NONAME || rc == -5 /* EAI_NODATA, GNU-only */ { return .success([]) }
        guard rc == 0 else { return .failure(.resolutionFailed(host: host, message: String(cString: gai_strerror(rc)))) }
        var addresses: [ResolvedAddress] = []
        var cursor = list
        while let entry = cursor?.pointee {
            if let sockaddr = entry.ai_addr, let address = ResolvedAddress(sockaddr: sockaddr), !addresses.contains(address) {
                addresses.append(address)
            }
            cursor = entry.ai_next
        }
        return .success(addresses)
    }
}

extension ResolvedAddress {
    /// The address in a `sockaddr_in` or `sockaddr_in6`, an IPv6 link-local one scoped to the
    /// link its `sin6_scope_id` names in the calling thread's namespace; `nil` for other
    /// families. A scope on any other address is dropped: the kernel routes those without it.
    init?(sockaddr pointer: UnsafeMutablePointer<sockaddr>) {
        guard let address = IPAddress(sockaddr: pointer) else { return nil }
        self.init(address)
        guard address.needsScope else { return }
        let index = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_scope_id }
        guard index != 0 else { return }
        var name = [UInt8](repeating: 0, count: Int(IF_NAMESIZE))
        let found = name.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { if_indextoname(index, $0.baseAddress!) != nil }
        }
        interface = found ? String(decoding: name.prefix { $0 != 0 }, as: UTF8.self) : String(index)
    }
}

extension NetworkNamespace {
    /// The directory of a named namespace's own configuration files, `/etc/netns/NAME`, which
    /// `ip netns exec NAME` mounts over `/etc` file by file (`hosts`, `resolv.conf`); nil for
    /// the current namespace and one opened by path.
    var ownConfiguration: String? { name.map { "\(Self.ownConfigurations)/\($0)" } }

    /// The directory of every named namespace's ``ownConfiguration``.
    static let ownConfigurations = "/etc/netns"
}

/// Answers from a hosts file (`/etc/hosts` syntax), never from DNS: for tests and for
/// namespaces with their own `/etc/netns/NAME/hosts`.
package struct HostsFileResolver: HostResolver {
    /// The file.
    package var path: String

    /// A resolver answering from `path`, read once per version of the file (``HostsFileIndex``).
    package init(path: String) {
        self.path = path
    }

    package func resolve(_ host: String) async throws -> [IPAddress] {
        guard let found = HostsFileIndex.addresses(of: host, inFileAt: path) else {
            throw ReachabilityError.resolutionFailed(host: host, message: "cannot read \(path)")
        }
        return found
    }

}

/// A fixed table of names, for tests and for apps that resolve elsewhere.
package struct StaticHostResolver: HostResolver {
    /// The table.
    package var table: [String: [IPAddress]]

    /// A resolver answering from `table` (unknown names have no addresses).
    package init(_ table: [String: [IPAddress]]) {
        self.table = table
    }

    package func resolve(_ host: String) async throws -> [IPAddress] { table[host] ?? [] }
}

extension IPAddress {
    /// The address in a `sockaddr_in` or `sockaddr_in6`; `nil` for other families.
    init?(sockaddr pointer: UnsafeMutablePointer<sockaddr>) {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            let octets = pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                withUnsafeBytes(of: address.pointee.sin_addr) { Array($0) }
            }
            self.init(octets: octets)
        case AF_INET6:
            let octets = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                withUnsafeBytes(of: address.pointee.sin6_addr) { Array($0) }
            }
            self.init(octets: octets)
        default:
            return nil
        }
    }
}

/// A few serial queues for blocking calls (getaddrinfo), used in turn.
///
/// Serial queues run on libdispatch's overcommit threads. The global concurrent queues would
/// start libdispatch's thread-pool monitor, a timer that wakes the process every second for as
/// long as it lives; a monitoring library must cost nothing while nothing changes.
final class BlockingLanes: Sendable {
    static let resolution = BlockingLanes(label: "ReachabilityMonitor.resolver", count: 4)

    private let lanes: [DispatchQueue]
    private let cursor = Atomic<Int>(0)

    init(label: String, count: Int) {
        lanes = (0..<count).map { DispatchQueue(label: "\(label) \($0)") }
    }

    /// The next lane, round robin.
    func next() -> DispatchQueue {
        lanes[cursor.add(1, ordering: .relaxed).oldValue % lanes.count]
    }
}
