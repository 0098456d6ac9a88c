import CNetlink

/// The attributes of one netlink message or nested attribute, as libnl's `nlmsg_parse` and
/// `nla_parse_nested` sort them by type: for what libnl 3.7's objects do not model (a route's
/// preference and next-hop object, a link's alternative names, next-hop objects, a few rule
/// fields).
///
/// libnl checks every attribute against the policy (a length that overruns the message, or is
/// shorter than the policy's minimum, fails the parse); the accessors read only attributes the
/// table holds. Valid while the message is.
struct AttributeTable {
    private var slots: [UnsafeMutablePointer<nlattr>?]

    /// Parses the attributes after the family header (`headerSize` bytes) of `message`.
    init?(message: UnsafeMutablePointer<nlmsghdr>, headerSize: Int, policy: AttributePolicy) {
        slots = Array(repeating: nil, count: policy.rules.count)
        let rc = policy.rules.withUnsafeBufferPointer { rules in
            nlmsg_parse(message, Int32(headerSize), &slots, Int32(rules.count - 1), rules.baseAddress)
        }
        guard rc >= 0 else { return nil }
    }

    /// Parses the attributes nested in `attribute`.
    init?(nestedIn attribute: UnsafeMutablePointer<nlattr>, policy: AttributePolicy) {
        slots = Array(repeating: nil, count: policy.rules.count)
        let rc = policy.rules.withUnsafeBufferPointer { rules in
            nla_parse_nested(&slots, Int32(rules.count - 1), attribute, rules.baseAddress)
        }
        guard rc >= 0 else { return nil }
    }

    /// The attribute of `type`, if the message has it.
    subscript<T: BinaryInteger>(type: T) -> UnsafeMutablePointer<nlattr>? {
        let index = Int(type)
        return slots.indices.contains(index) ? slots[index] : nil
    }

    func u8<T: BinaryInteger>(_ type: T) -> UInt8? { self[type].map { nla_get_u8($0) } }
    func u32<T: BinaryInteger>(_ type: T) -> UInt32? { self[type].map { nla_get_u32($0) } }
    func string<T: BinaryInteger>(_ type: T) -> String? { self[type].flatMap(Self.string) }

    /// The value of `type` as raw bytes.
    func bytes<T: BinaryInteger>(_ type: T) -> UnsafeRawBufferPointer? { self[type].map(Self.bytes) }

    /// The value of an attribute as raw bytes.
    static func bytes(_ attribute: UnsafeMutablePointer<nlattr>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: nla_data(attribute), count: Int(nla_len(attribute)))
    }

    /// A string attribute: its bytes up to the first NUL, as UTF-8.
    static func string(_ attribute: UnsafeMutablePointer<nlattr>) -> String {
        String(decoding: bytes(attribute).prefix { $0 != 0 }, as: UTF8.self)
    }

    /// Calls `body` with each attribute nested in `attribute`, in order (libnl's `nla_ok` and
    /// `nla_next`, as its `nla_for_each_nested` does).
    static func forEachNested(in attribute: UnsafeMutablePointer<nlattr>, _ body: (UnsafeMutablePointer<nlattr>) -> Void) {
        var remaining = nla_len(attribute)
        var current = nla_data(attribute).map { $0.assumingMemoryBound(to: nlattr.self) }
        while let nested = current, nla_ok(nested, remaining) != 0 {
            body(nested)
            current = nla_next(nested, &remaining)
        }
    }
}

/// What libnl checks of each attribute type before a table holds it (`struct nla_policy`).
struct AttributePolicy: Sendable {
    fileprivate var rules: [nla_policy]

    /// A policy for types up to `maxType`: each type of `rules` with its kind and minimum
    /// length; the others unchecked beyond their header.
    init(maxType: Int32, _ rules: [Int32: (kind: Kind, minimumLength: Int)]) {
        var table = Array(repeating: nla_policy(), count: Int(maxType) + 1)
        for (type, rule) in rules where type <= maxType {
            table[Int(type)].type = rule.kind.rawValue
            table[Int(type)].minlen = UInt16(rule.minimumLength)
        }
        self.rules = table
    }

    /// A kind of attribute libnl checks the length of (`NLA_U8`, `NLA_U32`, ...).
    struct Kind: Sendable {
        var rawValue: UInt16
        static let unspecified = Kind(rawValue: UInt16(NLA_UNSPEC))
        static let u8 = Kind(rawValue: UInt16(NLA_U8))
        static let u16 = Kind(rawValue: UInt16(NLA_U16))
        static let u32 = Kind(rawValue: UInt16(NLA_U32))
        static let string = Kind(rawValue: UInt16(NLA_STRING))
        static let flag = Kind(rawValue: UInt16(NLA_FLAG))
        static let nested = Kind(rawValue: UInt16(NLA_NESTED))
    }
}
