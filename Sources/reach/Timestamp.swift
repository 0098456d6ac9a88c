import Glibc

/// The current UTC time in ISO 8601 with microseconds (`2026-11-21T22:32:05.123456Z`).
///
/// Hand-formatted from `clock_gettime` because Foundation's formatters cost tens of
/// microseconds per call, which would show in the event latency of `reach events`.
func iso8601Now() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var parts = tm()
    var seconds = now.tv_sec
    gmtime_r(&seconds, &parts)
    // Written digit by digit into the 27 bytes of the result: no intermediate strings.
    return String(unsafeUninitializedCapacity: 27) { buffer in
        var position = 0
        func put(_ value: Int, digits: Int) {
            var remaining = value
            for index in stride(from: position + digits - 1, through: position, by: -1) {
                buffer[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
            position += digits
        }
        func put(_ character: Unicode.Scalar) {
            buffer[position] = UInt8(ascii: character)
            position += 1
        }
        put(Int(parts.tm_year) + 1900, digits: 4); put("-"); put(Int(parts.tm_mon) + 1, digits: 2); put("-")
        put(Int(parts.tm_mday), digits: 2); put("T"); put(Int(parts.tm_hour), digits: 2); put(":")
        put(Int(parts.tm_min), digits: 2); put(":"); put(Int(parts.tm_sec), digits: 2); put(".")
        put(now.tv_nsec / 1000, digits: 6); put("Z")
        return position
    }
}
