// monitor-fanout CHANGES NOTIFY: what the "10000 monitors" benchmark does, as a plain program
// for profilers. Creates its own namespace (rfan-PID: a veth and a default route via
// 10.200.0.2), starts 10 000 `ReachabilityMonitor` monitors of 198.18.x.y on one queue (posting
// notifications when NOTIFY is 1), waits for every first answer, then makes CHANGES default-route
// replacements (via .3, .2, ...), each waited for until all 10 000 monitors have been told, and
// prints each one's wall time. Root; the namespace is deleted at exit.
import Dispatch
import Foundation
import Netlink
import LinuxReachability
import ReachabilityCompat
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 3, let changes = Int(arguments[1]), ["0", "1"].contains(arguments[2]) else {
    FileHandle.standardError.write(Data("usage: monitor-fanout CHANGES NOTIFY(0|1)\n".utf8))
    exit(2)
}
let monitorCount = 10_000
let name = "rfan-\(getpid())"

/// Runs a shell command; system(3) rather than Foundation's Process, which fails under valgrind.
func shell(_ command: String) {
    guard system(command) == 0 else {
        FileHandle.standardError.write(Data("monitor-fanout: failed: \(command)\n".utf8))
        exit(1)
    }
}

shell("ip netns add \(name)")
atexit { _ = system("ip netns del rfan-\(getpid())") }
shell("ip -n \(name) -batch - <<'END'\nlink set lo up\nlink add vb0 type veth peer name vb1\naddress add 10.200.0.1/24 dev vb0\nlink set vb1 up\nlink set vb0 up\nroute add default via 10.200.0.2 dev vb0\nEND")

let namespace = try NetworkNamespace.named(name)
let queue = DispatchQueue(label: "monitor-fanout")
let told = Atomic<Int>(0)
let allTold = DispatchSemaphore(value: 0)
let monitors = try (0..<monitorCount).map { index in
    let monitor = try ReachabilityMonitor(address: IPAddress("198.18.\(index / 250).\(index % 250 + 1)")!,
                                   namespace: namespace, queue: queue)
    monitor.postsNotifications = arguments[2] == "1"
    monitor.onChange = { _, _ in
        if told.add(1, ordering: .relaxed).newValue == monitorCount { allTold.signal() }
    }
    return monitor
}
for monitor in monitors { monitor.startListening() }
allTold.wait()
for change in 0..<changes {
    told.store(0, ordering: .relaxed)
    let start = DispatchTime.now().uptimeNanoseconds
    shell("ip -n \(name) route replace default via 10.200.0.\(change % 2 == 0 ? 3 : 2) dev vb0")
    allTold.wait()
    print("change \(change): \((DispatchTime.now().uptimeNanoseconds - start) / 1000) µs (with the ip process)")
}
for monitor in monitors { monitor.stopListening() }
