import Glibc
import Netlink

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
