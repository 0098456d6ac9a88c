/// How a ``NetlinkSubscription`` talks to the kernel.
public struct SubscriptionOptions: Sendable, Hashable {
    /// The receive buffer of the notification socket, in bytes.
    ///
    /// The library asks for it with `SO_RCVBUFFORCE` (which needs `CAP_NET_ADMIN` and may exceed
    /// `net.core.rmem_max`) and falls back quietly to `SO_RCVBUF`, which the kernel caps at
    /// `rmem_max`. Whatever the size, an overflow is detected and repaired by re-reading the
    /// kernel's state; a larger buffer only makes that rarer.
    public var receiveBufferSize: Int

    /// The default: 4 MiB, which holds about 20 000 notifications.
    public static let defaultReceiveBufferSize = 4 << 20

    /// The largest notification datagram read in one piece at first (64 KiB, more than the
    /// kernel sends but for a link with hundreds of alternative names). A larger datagram is
    /// lost (a truncated datagram, reported as `NLE_MSG_TRUNC` with a re-read of the state),
    /// and the buffer grows to hold the next. Tests make it small, so that a read fails in the
    /// middle of the stream and the recovery from an error can be seen.
    package var messageBufferSize = 64 * 1024

    /// Creates options.
    public init(receiveBufferSize: Int = SubscriptionOptions.defaultReceiveBufferSize) {
        self.receiveBufferSize = receiveBufferSize
    }
}
