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
    func pad(_ value: Int32, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
    return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
        + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(now.tv_nsec / 1000), 6))Z"
}
