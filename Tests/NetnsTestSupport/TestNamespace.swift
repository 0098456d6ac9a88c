import Foundation
import Synchronization

/// A network namespace made for one test, with a unique name, deleted when the test ends.
///
/// Names are `rt<pid>-<n>-<label>` (at most 15 bytes of label), so that namespaces left behind
/// by a crashed run can be told apart and removed: ``removeLeftovers()`` deletes those whose
/// process is gone. Nothing here touches the root namespace: every `ip` command runs with
/// `-n NAME`, and links are created inside the namespace.
public final class TestNamespace: Sendable {
    /// The namespace name (`/run/netns/NAME`).
    public let name: String
    private let deleted = Atomic<Bool>(false)
    private static let counter = Atomic<Int>(0)

    /// Creates the namespace and brings its loopback up.
    public init(_ label: String = "t") throws {
        TestNamespace.removeLeftovers()
        let n = TestNamespace.counter.wrappingAdd(1, ordering: .relaxed).oldValue
        name = "rt\(getpid())-\(n)-\(label.prefix(15))"
        try run(["ip", "netns", "add", name])
        try ip("link", "set", "lo", "up")
    }

    deinit { delete() }

    /// `ip -batch` lines for two links with a carrier, for tests of two uplinks: the veth pairs
    /// va–vb and wa–wb, all up.
    public static let twoUplinkLinks = ["link add va type veth peer name vb", "link add wa type veth peer name wb",
                                        "link set va up", "link set vb up", "link set wa up", "link set wb up"]

    /// ``twoUplinkLinks`` with IPv4 addresses: va at 10.1.0.1/24 and wa at 10.2.0.1/24, so that
    /// 10.1.0.2 and 10.2.0.2 are on-link gateways.
    public static let twoUplinks = twoUplinkLinks + ["address add 10.1.0.1/24 dev va", "address add 10.2.0.1/24 dev wa"]

    /// The namespace file.
    public var path: String { "/run/netns/\(name)" }

    /// Deletes the namespace (and with it every link inside). Safe to call twice.
    public func delete() {
        guard !deleted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = try? run(["ip", "netns", "del", name], check: false)
    }

    /// Runs `ip -n NAME ARGS...` and returns its output.
    @discardableResult
    public func ip(_ arguments: String...) throws -> String {
        try run(["ip", "-n", name] + arguments).output
    }

    /// Runs `ip -n NAME ARGS...` and returns its status without throwing.
    @discardableResult
    public func ipStatus(_ arguments: String...) -> CommandResult {
        (try? run(["ip", "-n", name] + arguments, check: false)) ?? CommandResult(status: -1, output: "", error: "")
    }

    /// Runs `ip -n NAME -j ARGS...` and decodes its JSON array.
    public func ipJSON(_ arguments: String...) throws -> [[String: Any]] {
        let text = try run(["ip", "-n", name, "-j"] + arguments).output
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return [] }
        return (try JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [[String: Any]]) ?? []
    }

    /// Feeds `ip -n NAME -batch -` with one command per line (fast bulk changes).
    public func batch(_ lines: [String]) throws {
        try run(["ip", "-n", name, "-force", "-batch", "-"], input: lines.joined(separator: "\n") + "\n")
    }

    /// Runs a program inside the namespace (`ip netns exec`).
    @discardableResult
    public func exec(_ arguments: [String], check: Bool = true) throws -> CommandResult {
        try run(["ip", "netns", "exec", name] + arguments, check: check)
    }

    /// Turns IPv6 off in the namespace, for links made from now on too: a test whose rounds or
    /// batches must hold only what it does then sees no link-local address arrive a moment
    /// after a link comes up.
    public func disableIPv6() throws {
        try exec(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"])
    }

    /// The interface index of a link in this namespace.
    public func index(of link: String) throws -> Int32 {
        let info = try ipJSON("link", "show", "dev", link)
        guard let index = info.first?["ifindex"] as? Int else { throw CommandFailure(command: ["index", link], result: .init(status: 1, output: "", error: "no link")) }
        return Int32(index)
    }

    /// Deletes test namespaces whose creating process no longer runs, and the files such tests
    /// gave them (`/etc/netns/NAME`).
    public static func removeLeftovers() {
        for directory in ["/run/netns", "/etc/netns"] {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { continue }
            for name in names where name.hasPrefix("rt") {
                let digits = name.dropFirst(2).prefix { $0.isNumber }
                guard let pid = Int32(digits), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
                if directory == "/run/netns" {
                    _ = try? run(["ip", "netns", "del", name], check: false)
                } else {
                    try? FileManager.default.removeItem(atPath: "\(directory)/\(name)")
                }
            }
        }
    }
}

/// Runs `body` with a fresh namespace and deletes the namespace afterwards, also when `body`
/// throws or a expectation fails.
public func withTestNamespace<T>(_ label: String = "t", _ body: (TestNamespace) async throws -> T) async throws -> T {
    let namespace = try TestNamespace(label)
    defer { namespace.delete() }
    return try await body(namespace)
}

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds` (a liveness bound
/// so that a broken build fails instead of hanging; never a performance assertion). A condition
/// that holds costs only the time it takes, so the default is generous: 30 s, for a run under
/// the thread sanitizer on a busy machine (`scripts/stress.sh contended`), where work that takes
/// one second alone took more than ten.
public func eventually(_ seconds: Double = 30, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(20_000)
    }
    return try condition()
}

/// The value `read` gives twice in a row, `interval` seconds apart: the state that a burst of
/// the kernel's or the library's own work has come to rest in. Nil when it still changed after
/// `seconds` (a liveness bound, as ``eventually(_:_:)``'s).
public func settledValue<T: Equatable>(every interval: Double, within seconds: Double = 30,
                                       _ read: () throws -> T) rethrows -> T? {
    let deadline = Date().addingTimeInterval(seconds)
    var last = try read()
    while Date() < deadline {
        usleep(useconds_t(interval * 1_000_000))
        let now = try read()
        if now == last { return now }
        last = now
    }
    return nil
}

/// ``eventually(_:_:)`` for async tests whose condition waits for a task of their own, or is
/// async itself: it sleeps by suspending, so it does not hold one of the few threads of Swift's
/// cooperative pool (two on a two-core machine), which that task may need.
public func awaitEventually(_ seconds: Double = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
