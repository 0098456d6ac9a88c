import Foundation
import Glibc
import Netlink
import NetnsTestSupport
import Testing

@Suite("Only the kernel is heard", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ForeignSenderTests {
    /// Any process in a namespace may send a datagram to another process's netlink port. A
    /// subscription reads only what the kernel (port 0) sends: a route message forged by a
    /// process is not an event, and the real change that follows it in the socket is.
    @Test func aRouteMessageFromAnotherSocketIsNotAnEvent() throws {
        let ns = try TestNamespace("forged")
        defer { ns.delete() }
        try ns.batch(["link add dum0 type veth peer name dum0p", "link set dum0p up", "link set dum0 up",
                      "address add 10.9.0.1/24 dev dum0"])
        let index = try ns.index(of: "dum0")
        let namespace = try NetworkNamespace.named(ns.name)
        let subscription = try NetlinkSubscription(namespace: namespace)
        let recorder = EventRecorder(subscription)

        let sent = try namespace.perform { () throws(NetlinkError) -> Int in
            guard let port = subscribedPort() else { throw NetlinkError(code: NetlinkError.failure.code, context: "no subscribed socket") }
            return sendForgedRoute(to: port, destination: [198, 51, 100, 0], prefixLength: 24, linkIndex: index)
        }
        #expect(sent > 0, "the forged message was sent")
        try ns.ip("route", "add", "203.0.113.0/24", "dev", "dum0")

        let real = IPNetwork(address: IPAddress("203.0.113.0")!, prefixLength: 24)!
        #expect(recorder.waitFor { $0.routeChange?.route.destination == real }, "the kernel's change arrives")
        let forged = IPNetwork(address: IPAddress("198.51.100.0")!, prefixLength: 24)!
        #expect(!recorder.all.contains { $0.routeChange?.route.destination == forged },
                "the forged message, queued before the kernel's, was not taken for a route")
        #expect(!recorder.all.contains { if case .resynchronized = $0 { return true } else { return false } })
    }
}

/// The port of the one netlink socket in the calling thread's namespace that has joined
/// multicast groups (a subscription's notification socket), from `/proc/thread-self/net/netlink`
/// (columns: sk, protocol, port, groups, ...).
private func subscribedPort() -> UInt32? {
    guard let table = try? String(contentsOfFile: "/proc/thread-self/net/netlink", encoding: .utf8) else { return nil }
    let ports = table.split(separator: "\n").dropFirst().compactMap { line -> UInt32? in
        let columns = line.split(separator: " ", omittingEmptySubsequences: true)
        guard columns.count > 3, columns[1] == "0", let port = UInt32(columns[2]), port != 0,
              let groups = UInt32(columns[3], radix: 16), groups != 0 else { return nil }
        return port
    }
    return ports.count == 1 ? ports[0] : nil
}

/// Sends, from a socket of its own, an `RTM_NEWROUTE` message for `destination` through the
/// link at `linkIndex` to the netlink `port`. Returns what `sendto` returned.
private func sendForgedRoute(to port: UInt32, destination: [UInt8], prefixLength: UInt8, linkIndex: Int32) -> Int {
    func attribute(_ type: UInt16, _ payload: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt16(4 + payload.count).littleEndian) { Array($0) }
            + withUnsafeBytes(of: type.littleEndian) { Array($0) } + payload
    }
    let routeHeader: [UInt8] = [UInt8(AF_INET), prefixLength, 0, 0, 254 /* main */, 4 /* static */,
                                253 /* link scope */, 1 /* unicast */, 0, 0, 0, 0]
    let body = routeHeader + attribute(1 /* RTA_DST */, destination)
        + attribute(4 /* RTA_OIF */, withUnsafeBytes(of: linkIndex.littleEndian) { Array($0) })
    var message = withUnsafeBytes(of: UInt32(16 + body.count).littleEndian) { Array($0) }
    message += withUnsafeBytes(of: UInt16(24 /* RTM_NEWROUTE */).littleEndian) { Array($0) }
    message += [0, 0] + [UInt8](repeating: 0, count: 8) + body
    let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0 /* NETLINK_ROUTE */)
    guard fd >= 0 else { return -1 }
    defer { close(fd) }
    // struct sockaddr_nl (linux/netlink.h, which Swift's Glibc module does not carry): family,
    // padding, port, groups.
    let address = withUnsafeBytes(of: UInt16(AF_NETLINK)) { Array($0) } + [0, 0]
        + withUnsafeBytes(of: port) { Array($0) } + [0, 0, 0, 0]
    return address.withUnsafeBytes { bytes in
        sendto(fd, message, message.count, 0, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
    }
}
