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
        octets.map { byte in
            let digits = String(byte, radix: 16)
            return byte < 16 ? "0" + digits : digits
        }.joined(separator: ":")
    }
}
