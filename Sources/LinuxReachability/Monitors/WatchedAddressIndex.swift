import Netlink

/// The addresses that watched targets are judged by, sorted, to tell quickly whether a route
/// change can matter to any of them.
///
/// A route can change the kernel's answer only for destinations inside its prefix, and a
/// routing daemon may change thousands of routes a second, none of them near a watched address.
/// Asking this index costs two binary searches; only a change that contains a watched address
/// (or a default route) then wakes the evaluation queue.
struct WatchedAddressIndex {
    private var ipv4: [UInt32] = []
    private var ipv6: [IPv6Address] = []
    /// Whether a host name is among the watched targets (resolved or not): an address change
    /// means a new network for it, which it is resolved again on.
    var includesHostNames = false

    /// Builds the index of `addresses` (duplicates are fine).
    init<Addresses: Sequence<IPAddress>>(_ addresses: Addresses) {
        for address in addresses {
            switch address {
            case .v4(let a): ipv4.append(a.rawValue)
            case .v6(let a): ipv6.append(a)
            }
        }
        ipv4.sort()
        ipv6.sort()
    }

    /// Whether any indexed address is of `family`.
    func containsAddress(of family: AddressFamily) -> Bool {
        family == .ipv4 ? !ipv4.isEmpty : !ipv6.isEmpty
    }

    /// Whether any indexed address lies inside `network`.
    func containsAddress(in network: IPNetwork) -> Bool {
        switch network.address {
        case .v4(let base):
            let length = UInt32(min(network.prefixLength, 32))
            let mask: UInt32 = length == 0 ? 0 : UInt32.max << (32 - length)
            let first = base.rawValue & mask
            let index = Self.lowerBound(of: first, in: ipv4)
            return index < ipv4.count && ipv4[index] <= first | ~mask
        case .v6(let base):
            let length = Int(min(network.prefixLength, 128))
            func mask(_ bits: Int) -> UInt64 { bits <= 0 ? 0 : bits >= 64 ? .max : .max << UInt64(64 - bits) }
            let (highMask, lowMask) = (mask(length), mask(length - 64))
            let first = IPv6Address(high: base.high & highMask, low: base.low & lowMask)
            let last = IPv6Address(high: first.high | ~highMask, low: first.low | ~lowMask)
            let index = Self.lowerBound(of: first, in: ipv6)
            return index < ipv6.count && ipv6[index] <= last
        }
    }

    /// The first position whose element is not below `value`.
    private static func lowerBound<T: Comparable>(of value: T, in sorted: [T]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
