import Logging

/// How a ``NetlinkSubscription`` talks to the kernel, and where it logs.
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

    /// Where the subscription logs: its start and end at `debug`, a re-read after lost
    /// notifications at `notice` (the reason and what it found), a namespace that went away at
    /// `notice`, a failure that ends it at `error`. By default nothing is logged: pass a logger
    /// of the program's logging system to see them. Not part of equality.
    public var logger: Logger

    /// Creates options.
    public init(receiveBufferSize: Int = SubscriptionOptions.defaultReceiveBufferSize, followsNeighbors: Bool = false,
                logger: Logger = SubscriptionOptions.silentLogger) {
        self.receiveBufferSize = receiveBufferSize
        self.followsNeighbors = followsNeighbors
        self.logger = logger
    }

    /// The default logger: labelled `Netlink`, logging nothing.
    @usableFromInline package static let silentLogger = Logger(label: "Netlink", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Whether two options open the same kind of subscription (the logger aside).
    public static func == (lhs: SubscriptionOptions, rhs: SubscriptionOptions) -> Bool {
        lhs.receiveBufferSize == rhs.receiveBufferSize && lhs.followsNeighbors == rhs.followsNeighbors
    }

    /// Hashes what equality compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(receiveBufferSize)
        hasher.combine(followsNeighbors)
    }
}
