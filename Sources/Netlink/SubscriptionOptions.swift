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

    /// Whether the subscription follows the neighbour table (ARP and NDP entries: libnl's
    /// neighbour cache) and reports ``NetlinkEvent/neighbor(_:)``. Off by default: on a busy
    /// link its entries change state every few seconds.
    public var followsNeighbors: Bool

    /// Creates options.
    public init(receiveBufferSize: Int = SubscriptionOptions.defaultReceiveBufferSize, followsNeighbors: Bool = false) {
        self.receiveBufferSize = receiveBufferSize
        self.followsNeighbors = followsNeighbors
    }
}
