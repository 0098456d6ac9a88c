import Foundation
import Netlink
import Synchronization

/// A DNS server for tests, inside a test namespace: answers A and AAAA questions over UDP from a
/// table (NXDOMAIN for other names) and records the names it was asked. Nothing leaves the
/// namespace.
final class TestNameServer: Sendable {
    /// The names asked, lowercased, in order.
    var questions: [String] { asked.withLock { $0 } }

    private let descriptor: Int32
    private let records: [String: [IPAddress]]
    private let asked = Locked<[String]>([])
    private let stopped = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Binds UDP port 53 of `address` (IPv4) inside `namespace` and serves until ``stop()``.
    init(namespace: NetworkNamespace, address: String, records: [String: [IPAddress]]) throws {
        self.records = Dictionary(uniqueKeysWithValues: records.map { ($0.key.lowercased(), $0.value) })
        descriptor = try namespace.perform { () -> Int32 in
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_port = in_port_t(53).bigEndian
            inet_pton(AF_INET, address, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            return bound == 0 ? fd : -1
        }
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown) }
        Thread.detachNewThread { [self] in serve() }
    }

    /// Stops serving and closes the socket.
    func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
        close(descriptor)
    }

    deinit { stop() }

    private func serve() {
        var buffer = [UInt8](repeating: 0, count: 1500)
        while !stopped.load(ordering: .acquiring) {
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &peer) { peer in
                peer.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(descriptor, &buffer, buffer.count, 0, $0, &length) }
            }
            guard count > 0, let reply = answer(Array(buffer[..<count])) else { continue }
            _ = withUnsafePointer(to: &peer) { peer in
                peer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(descriptor, reply, reply.count, 0, $0, length) }
            }
        }
        finished.signal()
    }

    /// The reply to one query: its question, then the table's records of the asked type.
    private func answer(_ query: [UInt8]) -> [UInt8]? {
        guard query.count > 12 else { return nil }
        var labels: [String] = []
        var offset = 12
        while offset < query.count, query[offset] != 0 {
            let length = Int(query[offset])
            guard offset + 1 + length < query.count else { return nil }
            labels.append(String(decoding: query[(offset + 1)...(offset + length)], as: UTF8.self))
            offset += 1 + length
        }
        guard offset + 5 <= query.count else { return nil }
        let type = UInt16(query[offset + 1]) << 8 | UInt16(query[offset + 2])
        let questionEnd = offset + 5
        let name = labels.joined(separator: ".").lowercased()
        asked.withLock { $0.append(name) }
        let known = records[name]
        let matching = (known ?? []).filter { type == 1 ? $0.family == .ipv4 : type == 28 ? $0.family == .ipv6 : false }
        var reply = Array(query[0..<2])
        reply += [0x81, known == nil ? 0x83 : 0x80]  // a response, recursion available; NXDOMAIN for unknown names
        reply += [0, 1, 0, UInt8(matching.count), 0, 0, 0, 0]
        reply += query[12..<questionEnd]
        for address in matching {
            let octets = address.octets
            reply += [0xC0, 0x0C, 0, UInt8(type), 0, 1, 0, 0, 0, 60, 0, UInt8(octets.count)] + octets
        }
        return reply
    }
}
