// open-under-pressure: opens subscriptions of the given namespaces from 8 threads at once, and
// keeps them open, for the test that no descriptor limit (set with `prlimit`) makes the library
// abort (libnl 3.7 does when its cache manager cannot connect its own socket).
//
//   open-under-pressure NAMESPACE...    prints: opened N, refused M (then exits 0)
//
// Any other end (a signal, an abort inside libnl) is the test's failure.
import Glibc
import Netlink
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    let usage = "usage: open-under-pressure NAMESPACE...\n"
    _ = write(STDERR_FILENO, usage, usage.utf8.count)
    exit(2)
}
let names = Array(arguments.dropFirst())

/// One thread's work: a subscription of each namespace, kept until all are tried. Not isolated
/// to the main actor, as a closure written in top-level code would be.
nonisolated func openEach(_: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    var kept: [NetlinkSubscription] = []
    for name in CommandLine.arguments.dropFirst() {
        do {
            kept.append(try NetlinkSubscription(namespace: .named(name)))
            Outcomes.opened.add(1, ordering: .relaxed)
        } catch {
            Outcomes.refused.add(1, ordering: .relaxed)
        }
    }
    withExtendedLifetime(kept) {}
    return nil
}

/// What the threads count (globals of top-level code would be the main actor's).
enum Outcomes {
    static let opened = Atomic<Int>(0)
    static let refused = Atomic<Int>(0)
}
let threadCount = 8
var threads: [pthread_t] = []
for _ in 0..<threadCount {
    var thread = pthread_t()
    let started = pthread_create(&thread, nil, openEach, nil)
    // A thread that cannot start (no descriptor is needed for one) counts as refused work.
    if started == 0 { threads.append(thread) } else { Outcomes.refused.add(names.count, ordering: .relaxed) }
}
for thread in threads { pthread_join(thread, nil) }
print("opened \(Outcomes.opened.load(ordering: .relaxed)), refused \(Outcomes.refused.load(ordering: .relaxed))")
