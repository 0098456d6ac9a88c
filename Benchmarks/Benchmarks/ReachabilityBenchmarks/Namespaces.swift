import Foundation
import Netlink
import Synchronization

/// A network namespace that a benchmark builds with `ip` and deletes at exit. Needs root.
///
/// Every namespace has a veth pair `vb0`/`vb1` (both up), `10.200.0.1/24` on `vb0` and a default
/// route via `10.200.0.2`. Nothing here touches the root namespace.
final class BenchNamespace: Sendable {
    let name: String
    let namespace: NetworkNamespace

    private static let created = Mutex<[String]>([])

    init(_ label: String) throws {
        let name = "rbench-\(getpid())-\(label)"
        self.name = name
        try Shell.run("ip", "netns", "add", name)
        Self.created.withLock { names in
            if names.isEmpty { atexit { BenchNamespace.deleteAll() } }
            names.append(name)
        }
        try Shell.batch(in: name, """
            link set lo up
            link add vb0 type veth peer name vb1
            address add 10.200.0.1/24 dev vb0
            link set vb1 up
            link set vb0 up
            route add default via 10.200.0.2 dev vb0
            """)
        namespace = try NetworkNamespace.named(name)
    }

    /// Runs `ip -batch` lines inside the namespace.
    func batch(_ lines: String) throws { try Shell.batch(in: name, lines) }

    /// Runs an `ip -batch` file inside the namespace.
    func batch(file: String) throws { try Shell.run("ip", "-n", name, "-batch", file) }

    static func deleteAll() {
        for name in created.withLock({ $0 }) { try? Shell.run("ip", "netns", "del", name) }
    }
}

/// A long-lived `ip -batch -` inside a namespace: a change costs a line written to a pipe, not a
/// process start, so a benchmark can time from the request to its own callback.
final class IPCoprocess: @unchecked Sendable {
    // @unchecked Sendable: used by one benchmark iteration at a time.
    private let process = Process()
    private let input = Pipe()

    init(namespace name: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = ["-n", name, "-force", "-batch", "-"]
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

enum Shell {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ arguments: String...) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0].hasPrefix("/") ? arguments[0] : "/usr/sbin/\(arguments[0])")
        process.arguments = Array(arguments.dropFirst())
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }

    static func batch(in namespace: String, _ lines: String) throws {
        let file = NSTemporaryDirectory() + "rbench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).batch"
        try lines.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try run("ip", "-n", namespace, "-batch", file)
    }
}

/// `count` addresses in 198.18.0.0/15 (the benchmarking range), all routed by the default route.
func benchmarkAddresses(_ count: Int) -> [IPAddress] {
    (0..<count).map { IPAddress("198.18.\($0 / 250).\($0 % 250 + 1)")! }
}

/// Writes `ip -batch` lines that add (or delete) `count` /24 routes via 10.200.0.2, starting at 11.0.0.0.
func writeRouteBatch(_ count: Int, command: String, to path: String, prefixLength: Int = 24) throws {
    var text = ""
    text.reserveCapacity(count * 40)
    let step = 1 << (32 - prefixLength)
    for index in 0..<count {
        let value = (11 << 24) + index * step
        text += "route \(command) \(value >> 24).\((value >> 16) & 255).\((value >> 8) & 255).\(value & 255)/\(prefixLength) via 10.200.0.2\n"
    }
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}
