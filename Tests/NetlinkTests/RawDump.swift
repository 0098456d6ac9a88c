import Glibc
import CNetlink
@testable import Netlink

/// A link dump of the calling thread's namespace on a bare `NETLINK_ROUTE` socket, read as the
/// kernel sends it (no libnl): `body` gets every message of the answer, `NLMSG_DONE` included,
/// with its type, its header's flags and its bytes (header first), until it returns false or
/// the dump ends.
func rawLinkDump(_ body: (_ type: UInt16, _ flags: UInt16, _ message: [UInt8]) -> Bool) throws(NetlinkError) {
    // RTM_GETLINK with a struct ifinfomsg (16 bytes), family AF_UNSPEC.
    try rawDump(request: 18, familyHeaderSize: 16, body)
}

/// An address dump (`RTM_GETADDR`, every family), read like ``rawLinkDump(_:)``.
func rawAddressDump(_ body: (_ type: UInt16, _ flags: UInt16, _ message: [UInt8]) -> Bool) throws(NetlinkError) {
    // RTM_GETADDR with a struct ifaddrmsg (8 bytes), family AF_UNSPEC.
    try rawDump(request: 22, familyHeaderSize: 8, body)
}

/// A dump of `request` type, with a zeroed family header of `familyHeaderSize` bytes.
private func rawDump(request type: UInt16, familyHeaderSize: Int,
                     _ body: (_ type: UInt16, _ flags: UInt16, _ message: [UInt8]) -> Bool) throws(NetlinkError) {
    // linux/netlink.h and linux/rtnetlink.h, which Swift's Glibc module does not carry.
    let (netlinkRoute, requestAndDump, done, error): (Int32, UInt16, UInt16, UInt16) = (0, 0x301, 3, 2)
    let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), netlinkRoute)
    guard fd >= 0 else { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "socket") }
    defer { close(fd) }
    // struct nlmsghdr followed by the family header.
    var request = [UInt8](repeating: 0, count: 16 + familyHeaderSize)
    let size = UInt32(request.count)
    request.withUnsafeMutableBytes { bytes in
        bytes.storeBytes(of: size, toByteOffset: 0, as: UInt32.self)
        bytes.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
        bytes.storeBytes(of: requestAndDump, toByteOffset: 6, as: UInt16.self)
        bytes.storeBytes(of: UInt32(1), toByteOffset: 8, as: UInt32.self)
    }
    guard send(fd, request, request.count, 0) == request.count else {
        throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "send")
    }
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
        let received = recv(fd, &buffer, buffer.count, 0)
        guard received > 0 else { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "recv") }
        var offset = 0
        while offset + 16 <= received {
            let length = Int(buffer.withUnsafeBytes { $0.load(fromByteOffset: offset, as: UInt32.self) })
            let type = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 4, as: UInt16.self) }
            let flags = buffer.withUnsafeBytes { $0.load(fromByteOffset: offset + 6, as: UInt16.self) }
            guard length >= 16, offset + length <= received else { break }
            guard body(type, flags, Array(buffer[offset..<(offset + length)])), type != done, type != error else { return }
            offset += (length + 3) & ~3
        }
    }
}

/// Gives `parse` every truncation of `message`'s payload (the bytes after its 16-byte
/// `nlmsghdr`) and every single-byte change of it (to 0x00, 0x04, 0x7f and 0xff): each must
/// parse or be refused, never crash or read past the end (the address sanitizer run of the
/// suite would see a read past the end).
func feedEveryTruncationAndByteChange(of message: [UInt8], to parse: (UnsafeRawBufferPointer) -> Void) {
    for cut in 16..<message.count {
        Array(message[16..<cut]).withUnsafeBytes(parse)
    }
    for position in 16..<message.count {
        for value: UInt8 in [0x00, 0x04, 0x7f, 0xff] {
            var changed = message
            changed[position] = value
            changed.withUnsafeBytes { bytes in parse(UnsafeRawBufferPointer(rebasing: bytes[16...])) }
        }
    }
}

/// Runs `parse` on a netlink message of `type` (an `RTM_NEW*` number) whose payload is `payload`:
/// the bytes the kernel sends after the 16-byte `nlmsghdr`, which is made here.
func parsingMessage<T>(type: UInt16, payload: UnsafeRawBufferPointer,
                       _ parse: (UnsafeMutablePointer<nlmsghdr>) -> T?) -> T? {
    let length = MemoryLayout<nlmsghdr>.size + payload.count
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: MemoryLayout<nlmsghdr>.alignment)
    defer { buffer.deallocate() }
    let header = buffer.baseAddress!.initializeMemory(
        as: nlmsghdr.self, repeating: nlmsghdr(nlmsg_len: UInt32(length), nlmsg_type: type, nlmsg_flags: 0, nlmsg_seq: 0, nlmsg_pid: 0),
        count: 1)
    if payload.count > 0 {
        UnsafeMutableRawBufferPointer(rebasing: buffer[MemoryLayout<nlmsghdr>.size...]).copyMemory(from: payload)
    }
    return parse(header)
}

/// Runs `parse` on a libnl message (`nl_msg`) of `type` whose payload is `payload`, as libnl's
/// parsers take one.
func parsingLibNLMessage<T>(type: UInt16, payload: UnsafeRawBufferPointer, _ parse: (OpaquePointer) -> T?) -> T? {
    parsingMessage(type: type, payload: payload) { header in
        guard let message = nlmsg_convert(header) else { return nil }
        defer { nlmsg_free(message) }
        nlmsg_set_proto(message, NETLINK_ROUTE)
        return parse(message)
    }
}

// The message kinds the tests build from their payloads, parsed as the library parses the
// kernel's (`RTM_NEWROUTE` 24, `RTM_NEWLINK` 16, `RTM_NEWADDR` 20, `RTM_NEWRULE` 32,
// `RTM_NEWNEXTHOP` 104).
extension Route {
    init?(payload: UnsafeRawBufferPointer) {
        guard let route = parsingMessage(type: 24, payload: payload, { Route(message: $0) }) else { return nil }
        self = route
    }
}

extension Link {
    init?(payload: UnsafeRawBufferPointer) {
        guard let link = parsingLibNLMessage(type: 16, payload: payload, { Link(message: $0) }) else { return nil }
        self = link
    }
}

extension InterfaceAddress {
    init?(payload: UnsafeRawBufferPointer) {
        guard let address = parsingLibNLMessage(type: 20, payload: payload, { InterfaceAddress(message: $0) })
        else { return nil }
        self = address
    }
}

extension PolicyRule {
    init?(payload: UnsafeRawBufferPointer) {
        guard let rule = parsingLibNLMessage(type: 32, payload: payload, { PolicyRule(message: $0) }) else { return nil }
        self = rule
    }
}

extension NexthopObject {
    init?(payload: UnsafeRawBufferPointer) {
        guard let object = parsingMessage(type: 104, payload: payload, { NexthopObject(message: $0) }) else { return nil }
        self = object
    }
}
