import CNetlink
import Glibc

/// An address family of the Internet protocols.
public enum AddressFamily: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// IPv4. The corresponding C constant is `AF_INET`.
    case ipv4 = 2
    /// IPv6. The corresponding C constant is `AF_INET6`.
    case ipv6 = 10

    public var description: String { self == .ipv4 ? "ipv4" : "ipv6" }

    /// The width of an address of this family, in bits.
    public var bitWidth: UInt8 { self == .ipv4 ? 32 : 128 }
}

/// An IPv4 address, stored in host order (the first octet is the most significant byte).
public struct IPv4Address: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The address as a 32-bit number, first octet most significant.
    public var rawValue: UInt32

    /// Creates an address from its 32-bit value, first octet most significant.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Creates an address from four octets.
    public init(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) {
        rawValue = UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)
    }

    /// Parses a dotted-quad literal such as `192.0.2.1`; returns nil for anything else.
    public init?(_ text: String) {
        var storage = in_addr()
        // NUL is refused first: C would see only the text before it ("1.2.3.4\0junk").
        guard text.utf8.count <= 15, !text.utf8.contains(0), inet_pton(AF_INET, text, &storage) == 1 else { return nil }
        rawValue = UInt32(bigEndian: storage.s_addr)
    }

    /// The four octets, in network order.
    public var octets: [UInt8] {
        [UInt8(rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16),
         UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)]
    }

    /// Dotted decimal, written digit by digit into the string's own storage (at most 15
    /// bytes: no allocation, no intermediate strings). Event streams print millions of these.
    public var description: String {
        String(unsafeUninitializedCapacity: Self.dottedDecimalCapacity) { writeDottedDecimal(into: $0) }
    }

    /// The most bytes ``writeDottedDecimal(into:)`` writes.
    package static let dottedDecimalCapacity = 15

    /// Writes the dotted decimal form into `buffer` (at least ``dottedDecimalCapacity`` bytes)
    /// and returns how many bytes it wrote: for writers that put addresses straight into their
    /// own bytes.
    package func writeDottedDecimal(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var position = 0
        for shift in stride(from: 24, through: 0, by: -8) {
            let octet = Int((rawValue >> UInt32(shift)) & 0xff)
            if octet >= 100 { buffer[position] = UInt8(ascii: "0") + UInt8(octet / 100); position += 1 }
            if octet >= 10 { buffer[position] = UInt8(ascii: "0") + UInt8(octet / 10 % 10); position += 1 }
            buffer[position] = UInt8(ascii: "0") + UInt8(octet % 10)
            position += 1
            if shift > 0 { buffer[position] = UInt8(ascii: "."); position += 1 }
        }
        return position
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The unspecified address `0.0.0.0`.
    public static let any = IPv4Address(rawValue: 0)
    /// The loopback address `127.0.0.1`.
    public static let loopback = IPv4Address(127, 0, 0, 1)
}

/// An IPv6 address, stored as two 64-bit halves in host order.
public struct IPv6Address: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The first (most significant) 64 bits.
    public var high: UInt64
    /// The last 64 bits.
    public var low: UInt64

    /// Creates an address from its two 64-bit halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Creates an address from 16 octets in network order; nil if there are not exactly 16.
    public init?<Bytes: Collection>(octets: Bytes) where Bytes.Element == UInt8 {
        guard octets.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (i, byte) in octets.enumerated() {
            if i < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// Parses an IPv6 literal such as `2001:db8::1` (no zone, no brackets); nil for anything else.
    public init?(_ text: String) {
        var storage = in6_addr()
        guard text.utf8.count <= 45, !text.utf8.contains(0), inet_pton(AF_INET6, text, &storage) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &storage) { Array($0) }
        self.init(octets: bytes)
    }

    /// The 16 octets, in network order.
    public var octets: [UInt8] {
        (0..<16).map { i in
            let half = i < 8 ? high : low
            return UInt8(truncatingIfNeeded: half >> (UInt64(7 - i % 8) * 8))
        }
    }

    /// The text form of RFC 5952 (as `inet_ntop` writes it), formatted on the stack.
    public var description: String {
        var storage = in6_addr()
        withUnsafeMutableBytes(of: &storage) { raw in
            raw.storeBytes(of: high.bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            guard inet_ntop(AF_INET6, &storage, buffer.baseAddress, socklen_t(buffer.count)) != nil else { return "::" }
            return String(cString: buffer.baseAddress!)
        }
    }

    /// True for link-local unicast addresses (`fe80::/10`).
    public var isLinkLocal: Bool { high >> 54 == 0x3fa }

    /// The IPv4 address inside an IPv4-mapped address (`::ffff:a.b.c.d`, RFC 4291 section
    /// 2.5.5.2), to which a dual-stack socket sends over IPv4; nil for any other address.
    public var mappedIPv4: IPv4Address? {
        high == 0 && low >> 32 == 0xffff ? IPv4Address(rawValue: UInt32(truncatingIfNeeded: low)) : nil
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    /// The unspecified address `::`.
    public static let any = IPv6Address(high: 0, low: 0)
    /// The loopback address `::1`.
    public static let loopback = IPv6Address(high: 0, low: 1)
}

/// An IPv4 or IPv6 address.
public enum IPAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// An IPv4 address.
    case v4(IPv4Address)
    /// An IPv6 address.
    case v6(IPv6Address)

    /// Parses an IPv4 or IPv6 literal. IPv6 may be written in brackets (`[2001:db8::1]`).
    /// Returns nil for anything else, names included.
    public init?(_ text: String) {
        if let v4 = IPv4Address(text) {
            self = .v4(v4)
        } else if let v6 = IPv6Address(text) {
            self = .v6(v6)
        } else if text.hasPrefix("["), text.hasSuffix("]"), let v6 = IPv6Address(String(text.dropFirst().dropLast())) {
            self = .v6(v6)
        } else {
            return nil
        }
    }

    /// Creates an address from 4 or 16 octets in network order.
    public init?<Bytes: Collection>(octets: Bytes) where Bytes.Element == UInt8 {
        switch octets.count {
        case 4:
            var value: UInt32 = 0
            for byte in octets { value = value << 8 | UInt32(byte) }
            self = .v4(IPv4Address(rawValue: value))
        case 16:
            guard let v6 = IPv6Address(octets: octets) else { return nil }
            self = .v6(v6)
        default:
            return nil
        }
    }

    /// The family of this address.
    public var family: AddressFamily {
        if case .v4 = self { return .ipv4 }
        return .ipv6
    }

    /// The octets, in network order (4 or 16 of them).
    public var octets: [UInt8] {
        switch self {
        case .v4(let a): return a.octets
        case .v6(let a): return a.octets
        }
    }

    /// True for `0.0.0.0` and `::`.
    public var isUnspecified: Bool { self == .v4(.any) || self == .v6(.any) }

    /// The address a socket sends to: the IPv4 address inside an IPv4-mapped IPv6 address
    /// (`IPv6Address.mappedIPv4`), which a dual-stack socket reaches over IPv4; any other
    /// address unchanged.
    public var unmapped: IPAddress {
        if case .v6(let address) = self, let inner = address.mappedIPv4 { return .v4(inner) }
        return self
    }

    public var description: String {
        switch self {
        case .v4(let a): return a.description
        case .v6(let a): return a.description
        }
    }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case let (.v4(a), .v4(b)): return a < b
        case let (.v6(a), .v6(b)): return a < b
        case (.v4, .v6): return true
        case (.v6, .v4): return false
        }
    }
}

/// An address with a prefix length: a network (`10.0.0.0/8`) or an interface address
/// (`10.0.0.2/24`).
public struct IPNetwork: Sendable, Hashable, CustomStringConvertible {
    /// The address part.
    public var address: IPAddress
    /// The prefix length in bits (0 to 32 for IPv4, 0 to 128 for IPv6).
    public var prefixLength: UInt8

    /// Creates a network, checking that the prefix fits the family.
    public init?(address: IPAddress, prefixLength: UInt8) {
        guard prefixLength <= address.family.bitWidth else { return nil }
        self.address = address
        self.prefixLength = prefixLength
    }

    /// Parses `ADDRESS/LENGTH`, or a bare address (a host prefix), or `default`
    /// (which needs a family: use ``defaultRoute(_:)`` instead).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress(String(parts[0])) else { return nil }
        if parts.count == 1 {
            self.init(address: address, prefixLength: address.family.bitWidth)
        } else {
            // One to three ASCII digits: `UInt8(_:)` alone would take "+8" and "-0".
            guard (1...3).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let length = UInt8(parts[1]) else { return nil }
            self.init(address: address, prefixLength: length)
        }
    }

    /// The default route's destination of a family: `0.0.0.0/0` or `::/0`.
    public static func defaultRoute(_ family: AddressFamily) -> IPNetwork {
        IPNetwork(address: family == .ipv4 ? .v4(.any) : .v6(.any), prefixLength: 0)!
    }

    /// True for a zero-length prefix (a default route's destination).
    public var isDefault: Bool { prefixLength == 0 }

    /// The halves of the IPv4 address space, which VPNs route in place of a default route.
    package static let lowerIPv4Half = IPNetwork("0.0.0.0/1")!
    package static let upperIPv4Half = IPNetwork("128.0.0.0/1")!

    /// True when `other` lies inside this network (same family, same leading bits).
    public func contains(_ other: IPAddress) -> Bool {
        switch (address, other) {
        case let (.v4(net), .v4(host)):
            guard prefixLength > 0 else { return true }
            let mask = UInt32.max << (32 - UInt32(prefixLength))
            return net.rawValue & mask == host.rawValue & mask
        case let (.v6(net), .v6(host)):
            let length = Int(prefixLength)
            func masked(_ value: UInt64, _ bits: Int) -> UInt64 {
                bits <= 0 ? 0 : bits >= 64 ? value : value & (UInt64.max << UInt64(64 - bits))
            }
            return masked(net.high, length) == masked(host.high, length)
                && masked(net.low, length - 64) == masked(host.low, length - 64)
        default:
            return false
        }
    }

    public var description: String { "\(address)/\(prefixLength)" }
}
