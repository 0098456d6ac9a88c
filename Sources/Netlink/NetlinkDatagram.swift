import CNetlink

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
