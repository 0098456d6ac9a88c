// lookup-loop: the library's fresh route lookup in the shape of the bare-C floor, `raw_lookup`
// (../shared/bench/peers/raw_lookup.c): N lookups of ADDRESS, one after the other, on one
// NetlinkConnection in the current namespace, timed as a whole.
//
//   lookup-loop ADDRESS [N]      prints: NS ns per lookup (FOUND of N found a route)
//
// compare.py runs it and raw_lookup in alternating rounds in the same minute, so that the
// ratio of the two does not depend on which phase of a shared VM each one ran in.
import Glibc
import Netlink

let arguments = CommandLine.arguments
guard arguments.count >= 2, let destination = IPAddress(arguments[1]),
      let count = arguments.count > 2 ? Int(arguments[2]) : 100_000, count > 0 else {
    let usage = "usage: lookup-loop ADDRESS [N]\n"
    _ = write(STDERR_FILENO, usage, usage.utf8.count)
    exit(2)
}
let connection = try NetlinkConnection()
var found = 0
let start = monotonicNanoseconds()
for _ in 0..<count {
    if case .route = try connection.lookupRoute(to: destination) { found += 1 }
}
let elapsed = monotonicNanoseconds() - start
print("\(elapsed / UInt64(count)) ns per lookup (\(found) of \(count) found a route)")

/// The monotonic clock, in nanoseconds.
func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}
