import Netlink

/// A set of address families in one byte: what an evaluation round notes on the subscription's
/// thread, where a `Set` would allocate.
struct AddressFamilies: Equatable {
    private var bits: UInt8 = 0

    /// No family.
    init() {}

    private static func bit(_ family: AddressFamily) -> UInt8 { family == .ipv4 ? 1 : 2 }

    /// Whether no family is in the set.
    var isEmpty: Bool { bits == 0 }

    /// Whether `family` is in the set.
    func contains(_ family: AddressFamily) -> Bool { bits & Self.bit(family) != 0 }

    /// Adds `family`.
    mutating func insert(_ family: AddressFamily) { bits |= Self.bit(family) }
}
