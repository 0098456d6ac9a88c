// engine-lifetime: uses every kind of monitor of one namespace, lets them go, and prints the
// process's threads and descriptors before, during and after, for the test that a namespace's
// engine (its subscription's thread, sockets and namespace handle, the inotify thread) ends
// with its last user.
//
//   engine-lifetime NAMESPACE      prints one line per moment: LABEL THREADS DESCRIPTORS NAMES
//
// The monitors are used once before the first count, so that what a process sets up once
// (libdispatch's worker threads, c-ares, libnl's operations) is part of the baseline; the
// library's own threads (`netlink ...`, `inotify`) must be gone by then too.
import Dispatch
import Glibc
import Netlink
import LinuxReachability
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    let usage = "usage: engine-lifetime NAMESPACE\n"
    _ = write(STDERR_FILENO, usage, usage.utf8.count)
    exit(2)
}
let namespace = try NetworkNamespace.named(arguments[1])

/// The names of the process's threads, sorted.
func threadNames() -> [String] {
    entries(of: "/proc/self/task").compactMap { task -> String? in
        guard let file = fopen("/proc/self/task/\(task)/comm", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, 64, file) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }.sorted()
}

/// The entries of a directory, without `.` and `..`.
func entries(of path: String) -> [String] {
    guard let directory = opendir(path) else { return [] }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}

/// The descriptors open, less the one that lists them.
func descriptorCount() -> Int { entries(of: "/proc/self/fd").count - 1 }

/// What each open descriptor is (`socket:[...]`, `anon_inode:[eventfd]`, ...), sorted.
func descriptorTargets() -> [String] {
    entries(of: "/proc/self/fd").compactMap { fd -> String? in
        var buffer = [CChar](repeating: 0, count: 256)
        let length = readlink("/proc/self/fd/\(fd)", &buffer, 255)
        return length > 0 ? String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }.sorted()
}

/// The threads that are not libdispatch's workers (`com.apple.root.*-qos*`, which come and go
/// on their own): the process's own and the library's.
func ownThreads() -> [String] { threadNames().filter { !$0.contains("qos") } }

/// Threads of the library itself.
func libraryThreads() -> [String] { ownThreads().filter { $0.hasPrefix("netlink") || $0.hasPrefix("netns") || $0 == "inotify" } }

/// Prints a line at once (a write of its own: nothing is lost to a buffer if the test kills
/// the process).
func report(_ label: String) {
    let line = "\(label)\t\(ownThreads().joined(separator: ","))\t\(descriptorCount())\t\(descriptorTargets().joined(separator: ","))\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(STDOUT_FILENO, $0.baseAddress, $0.count - 1) }
}

/// Waits (up to 10 s) until the library's threads are gone and the descriptors are back to
/// `descriptors` or fewer; with none given, until they have not changed for 200 ms.
func settle(to descriptors: Int? = nil) {
    var steady = 0
    var last = -1
    for _ in 0..<1000 {
        let count = descriptorCount()
        steady = count == last ? steady + 1 : 0
        last = count
        if libraryThreads().isEmpty, descriptors.map({ count <= $0 }) ?? (steady >= 20) { return }
        usleep(10_000)
    }
}

/// Every kind of user of the namespace's engine: a listening monitor, an answer stream, a path
/// monitor started on a queue and a path sequence, the last two iterated by tasks that are
/// cancelled. Returns once each has had its first answer and has been let go.
func useEveryMonitor() async throws {
    let monitor = try ReachabilityMonitor(address: IPAddress("10.9.0.2")!, namespace: namespace)
    let told = Flag()
    monitor.onChange = { _, _ in told.set() }
    monitor.startListening()
    let streamed = Task { for await _ in monitor.updates() { told.set() } }
    let paths = NetworkPathMonitor(namespace: namespace)
    paths.pathUpdateHandler = { _ in told.set() }
    paths.start(queue: DispatchQueue(label: "engine-lifetime.paths"))
    let followed = Task { for await _ in NetworkPathMonitor(namespace: namespace) { told.set() } }
    // Polled without `Task.sleep`, whose clock's timer libdispatch would set up the first time.
    while !told.isSet { usleep(1_000) }
    report("during")
    streamed.cancel()
    followed.cancel()
    _ = await (streamed.value, followed.value)
    monitor.stopListening()
    paths.cancel()
}

/// Set once, read from anywhere.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

report("start")
try await useEveryMonitor()
// What the process set up once (libdispatch's manager, three descriptors) stays; the library's
// threads, sockets and handles go. The first count is taken once they are gone.
settle()
report("baseline")
let descriptors = descriptorCount()
try await useEveryMonitor()
settle(to: descriptors)
report("after")
