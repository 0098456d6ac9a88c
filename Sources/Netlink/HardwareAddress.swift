/// A link-layer address, such as an Ethernet MAC address.
public struct HardwareAddress: Sendable, Hashable, CustomStringConvertible {
    /// The octets of the address.
    public var octets: [UInt8]

    /// Creates an address from its octets.
    public init(octets: [UInt8]) { self.octets = octets }

    /// Parses colon-separated hexadecimal octets (`02:00:5e:10:00:01`).
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...2).contains(part.count), let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        guard !bytes.isEmpty else { return nil }
        octets = bytes
    }

    /// Lower-case, colon-separated hexadecimal, as `ip link` prints it.
    public var description: String {
        guard !octets.isEmpty else { return "" }
        return String(unsafeUninitializedCapacity: octets.count * 3 - 1) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var position = 0
            for (offset, byte) in octets.enumerated() {
                if offset > 0 {
                    buffer[position] = UInt8(ascii: ":")
                    position += 1
                }
                buffer[position] = digits.utf8Start[Int(byte >> 4)]
                buffer[position + 1] = digits.utf8Start[Int(byte & 0x0f)]
                position += 2
            }
            return position
        }
    }
}
