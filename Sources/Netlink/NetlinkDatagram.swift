import CNetlink
import Glibc

/// The bytes of a message after its header, or nil when they are fewer than `minimum` (the
/// family header its parser reads first: `rtmsg`, `ifinfomsg`, `ifaddrmsg`, ...).
func netlinkPayload(of header: UnsafePointer<nlmsghdr>, atLeast minimum: Int) -> UnsafeRawBufferPointer? {
    let length = Int(header.pointee.nlmsg_len)
    let headerSize = MemoryLayout<nlmsghdr>.size
    guard length >= headerSize + minimum else { return nil }
    return UnsafeRawBufferPointer(start: UnsafeRawPointer(header) + headerSize, count: length - headerSize)
}

/// Calls `body` with each whole message of a netlink datagram, in order (`NLMSG_OK` and
/// `NLMSG_NEXT`): a message whose length is shorter than its header or runs past the datagram
/// ends the walk. The pointers are valid while the datagram's bytes are.
func forEachNetlinkMessage<Failure: Error>(in datagram: UnsafeMutableRawBufferPointer,
                                           _ body: (UnsafeMutablePointer<nlmsghdr>) throws(Failure) -> Void) throws(Failure) {
    guard let base = datagram.baseAddress else { return }
    let headerSize = MemoryLayout<nlmsghdr>.size
    var offset = 0
    while offset + headerSize <= datagram.count {
        let header = (base + offset).assumingMemoryBound(to: nlmsghdr.self)
        let length = Int(header.pointee.nlmsg_len)
        guard length >= headerSize, offset + length <= datagram.count else { return }
        try body(header)
        offset += (length + 3) & ~3  // NLMSG_ALIGN
    }
}

/// Replaces `buffer` with one that holds `size` bytes, and at least twice as many as before, in
/// whole pages: after a datagram that did not fit (a link with hundreds of alternative names),
/// room for the next to be a little larger. Nothing read into the old buffer may be in use.
func growDatagramBuffer(_ buffer: inout UnsafeMutableRawBufferPointer, toHold size: Int, alignment: Int) {
    let bytes = (max(size, 2 * buffer.count) + 4095) & ~4095
    buffer.deallocate()
    buffer = .allocate(byteCount: bytes, alignment: alignment)
}

/// The largest dump datagram the kernel fills (`SKB_WITH_OVERHEAD(32768)` in `netlink_recvmsg`),
/// rounded up: a read into this many bytes is never cut short, but in a link dump, whose
/// datagrams are as large as its largest link message (`rtnl_calcit`; over 64 KiB for a link
/// with hundreds of alternative names: see `RawRouteSocket`, whose reads grow their buffer).
let largestDumpDatagram = 32 * 1024

/// Makes the kernel fill this socket's dump datagrams to the largest size from the first one on.
///
/// The kernel sizes a dump's datagrams by the largest read the socket has done so far, and a
/// new socket has done none: the first datagram of its first dump, filled while the request is
/// sent, holds about 3.7 KiB (`NLMSG_GOODSIZE`). A first message larger than that (a multipath
/// route of some 230 IPv4 or 130 IPv6 next hops) does not fit, and the dump then ends at once
/// with `NLMSG_DONE` and no error: the whole table reads as empty (`ip route show` shows nothing
/// either). One read of an acknowledged `NLMSG_NOOP` into `buffer` (at least
/// ``largestDumpDatagram`` bytes) raises the socket's size to 32 KiB, the most a dump uses; it
/// costs a `sendto` and a `recv` when the socket is opened.
func raiseDumpDatagramSize(of fd: Int32, using buffer: UnsafeMutableRawBufferPointer) throws(NetlinkError) {
    precondition(buffer.count >= largestDumpDatagram)
    var request = nlmsghdr()
    request.nlmsg_len = UInt32(MemoryLayout<nlmsghdr>.size)
    request.nlmsg_type = UInt16(NLMSG_NOOP)
    request.nlmsg_flags = UInt16(NLM_F_REQUEST | NLM_F_ACK)
    var address = sockaddr_nl()
    address.nl_family = sa_family_t(AF_NETLINK)
    let sent = withUnsafePointer(to: &request) { message in
        withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, message, MemoryLayout<nlmsghdr>.size, 0, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
            }
        }
    }
    guard sent >= 0 else { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "send netlink no-op") }
    // The kernel answers in `sendto`: the acknowledgement is already waiting.
    var received: Int
    repeat { received = recv(fd, buffer.baseAddress, buffer.count, 0) } while received < 0 && errno == EINTR
    guard received >= 0 else { throw NetlinkError(code: NetlinkError.failure.code, systemErrno: errno, context: "read netlink no-op acknowledgement") }
}
