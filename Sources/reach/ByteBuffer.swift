/// Where the tool's JSON and timestamps are written, byte by byte or a run at a time: a
/// `[UInt8]`, or a ``ByteBuffer`` for the lines `reach events` prints by the hundred thousand.
protocol ByteSink {
    /// Appends one byte.
    mutating func append(_ byte: UInt8)
    /// Appends a run of bytes.
    mutating func append(bytes: UnsafeBufferPointer<UInt8>)
}

extension Array: ByteSink where Element == UInt8 {
    mutating func append(bytes: UnsafeBufferPointer<UInt8>) { append(contentsOf: bytes) }
}

extension ByteSink {
    /// Appends text known when the tool was built.
    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(bytes: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends the bytes of an array.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append(bytes: $0) }
    }

    /// Appends a string's UTF-8 bytes.
    mutating func append(utf8 text: String) {
        var text = text
        text.withUTF8 { append(bytes: $0) }
    }

    /// Appends `value` in decimal, with at least `digits` digits (zeros in front).
    mutating func appendDecimal(_ value: Int64, digits: Int = 1) {
        // Octets, prefix lengths, indices and metrics are mostly under 1000: their digits are
        // appended one by one, without the scratch space.
        if value >= 0, value < 1000, digits <= 3 {
            let zero = UInt8(ascii: "0")
            if value >= 100 || digits == 3 { append(zero + UInt8(value / 100)) }
            if value >= 10 || digits >= 2 { append(zero + UInt8(value / 10 % 10)) }
            append(zero + UInt8(value % 10))
            return
        }
        if value < 0 { append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // 20 digits hold any Int64; written from the end, then appended as one run.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digitsBuffer in
            var start = 20
            repeat {
                start -= 1
                digitsBuffer[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0 || 20 - start < digits
            append(bytes: UnsafeBufferPointer(rebasing: digitsBuffer[start...]))
        }
    }
}

/// A growable run of bytes that appends with one copy and no reference-count or uniqueness
/// check: `Array.append(contentsOf:)` cost some 170 instructions for a ten-byte key, more than
/// the copy itself, and a route line has two dozen of them (callgrind of `reach events --json`).
final class ByteBuffer: ByteSink {
    private var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    /// An empty buffer with room for `capacity` bytes before it grows.
    init(capacity: Int = 1024) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    @inline(__always)
    func append(_ byte: UInt8) {
        if count == capacity { grow(toHold: count + 1) }
        base[count] = byte
        count += 1
    }

    @inline(__always)
    func append(bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        if count + bytes.count > capacity { grow(toHold: count + bytes.count) }
        Self.copy(from: source, count: bytes.count, to: base + count)
        count += bytes.count
    }

    /// Copies `count` bytes that do not overlap the destination. Runs of up to 16 bytes (a
    /// line's keys, names and addresses) are copied with two loads and two stores that may
    /// overlap, as `memcpy` does inside, without its call: through the PLT and its dispatch on
    /// the size, `memmove` cost some 50 instructions for a ten-byte key (callgrind of
    /// `reach events --json`), more than the rest of the key's writing.
    @inline(__always)
    private static func copy(from source: UnsafePointer<UInt8>, count: Int, to destination: UnsafeMutablePointer<UInt8>) {
        let from = UnsafeRawPointer(source), to = UnsafeMutableRawPointer(destination)
        switch count {
        case 8...16:
            to.storeBytes(of: from.loadUnaligned(as: UInt64.self), as: UInt64.self)
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self),
                          toByteOffset: count - 8, as: UInt64.self)
        case 4..<8:
            to.storeBytes(of: from.loadUnaligned(as: UInt32.self), as: UInt32.self)
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self),
                          toByteOffset: count - 4, as: UInt32.self)
        case 1..<4:
            destination[0] = source[0]
            destination[count / 2] = source[count / 2]
            destination[count - 1] = source[count - 1]
        case 0: break
        default: destination.update(from: source, count: count)
        }
    }

    /// Appends `text` between double quotes, after a comma if `comma` and before a colon if
    /// `colon`: a JSON key (`,"key":`) or a string value known when the tool was built, with
    /// one check of the room. Appended piece by piece, a route line's sixteen keys cost more
    /// than their copies.
    @inline(__always)
    func appendQuoted(_ text: StaticString, comma: Bool, colon: Bool) {
        let length = text.utf8CodeUnitCount
        if count + length + 4 > capacity { grow(toHold: count + length + 4) }
        var end = base + count
        if comma {
            end.pointee = UInt8(ascii: ",")
            end += 1
        }
        end.pointee = UInt8(ascii: "\"")
        Self.copy(from: text.utf8Start, count: length, to: end + 1)
        end += length + 1
        end.pointee = UInt8(ascii: "\"")
        end += 1
        if colon {
            end.pointee = UInt8(ascii: ":")
            end += 1
        }
        count = end - base
    }

    /// Calls `body` with the bytes written so far (valid only during the call).
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// Forgets what was written and keeps the room, for the next run of bytes.
    func removeAll() { count = 0 }

    /// Doubles the room (or more, to hold `needed` bytes), keeping what was written.
    private func grow(toHold needed: Int) {
        let newCapacity = max(needed, capacity * 2)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.update(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }
}
