// Checks an address once, watches the internet through an AsyncSequence, watches a host with a
// closure and prints the path: `CoreOnly ADDRESS HOST`.
import Glibc
import LinuxReachability

let arguments = CommandLine.arguments
guard arguments.count == 3, let address = IPAddress(arguments[1]) else {
    print("usage: CoreOnly ADDRESS HOST")
    exit(2)
}

// Once, without a subscription.
let probe = try ReachabilityProbe()
let (checked, _) = try await probe.answer(for: .address(address))
print("check \(address): \(checked)")

// The internet, its current answer first.
let internet = try ReachabilityMonitor(target: .internet)
for await answer in internet.updates() {
    print("internet: \(answer.status)")
    break
}

// A host name, with a closure; its first answer comes once the name is resolved.
let host = try ReachabilityMonitor(host: arguments[2])
let told = AsyncStream<ReachabilityAnswer>.makeStream()
host.onChange = { _, answer in told.continuation.yield(answer) }
host.startListening()
for await answer in told.stream {
    print("host \(arguments[2]): \(answer)")
    break
}
host.stopListening()

// The path, NWPathMonitor's way.
let paths = NetworkPathMonitor()
for await path in paths {
    print("path: \(path.status) via \(path.availableInterfaces.map(\.name))")
    break
}
