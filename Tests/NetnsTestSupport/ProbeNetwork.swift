import Foundation

/// Two test namespaces joined by a veth pair, for connectivity probes: the client's default
/// route leads to the server namespace, where `Tests/Fixtures/probe-server.py` answers HTTP at
/// ``serverAddress`` port 80 in the way ``setMode(_:)`` last asked for. Nothing leaves the two
/// namespaces; both are deleted and the server ended (by its process id) on ``stop()``.
public final class ProbeNetwork: Sendable {
    /// The namespace that probes: link `c0` at 10.77.0.2/24, default route via the server.
    public let client: TestNamespace
    /// The namespace of the HTTP server: link `s0` at 10.77.0.1/24.
    public let server: TestNamespace
    /// The server's address.
    public let serverAddress = "10.77.0.1"
    private let modeFile: String
    private let process: Process

    /// Builds both namespaces and starts the server answering 204. Without `ipv6`, the
    /// namespaces have IPv6 turned off: no link-local address arrives after the links come up.
    public init(_ label: String, ipv6: Bool = true) throws {
        client = try TestNamespace(label + "c")
        server = try TestNamespace(label + "s")
        if !ipv6 {
            try client.disableIPv6()
            try server.disableIPv6()
        }
        modeFile = NSTemporaryDirectory() + "probe-mode-\(client.name)"
        try "204".write(toFile: modeFile, atomically: true, encoding: .utf8)
        try client.ip("link", "add", "c0", "type", "veth", "peer", "name", "s0", "netns", server.name)
        try server.batch(["address add 10.77.0.1/24 dev s0", "link set s0 up"])
        try client.batch(["address add 10.77.0.2/24 dev c0", "link set c0 up", "route add default via 10.77.0.1"])
        // The kernel turns a veth's carrier on a moment after both ends are up.
        let client = self.client
        _ = eventually(10) { (try? client.ip("link", "show", "c0"))?.contains("LOWER_UP") == true }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fixtures/probe-server.py").standardized.path
        let output = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // `ip netns exec` runs the server in place of itself: the process id is the server's.
        process.arguments = ["ip", "netns", "exec", server.name, "python3", script, serverAddress, "80", modeFile]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let ready = output.fileHandleForReading.availableData
        guard String(decoding: ready, as: UTF8.self).hasPrefix("ready") else {
            stop()
            throw CommandFailure(command: process.arguments ?? [], result: CommandResult(status: 1, output: "", error: "the probe server did not start"))
        }
    }

    deinit { stop() }

    /// The URL of `path` on the server.
    public func url(_ path: String = "/generate_204", port: Int = 80, scheme: String = "http") -> String {
        "\(scheme)://\(serverAddress):\(port)\(path)"
    }

    /// Makes the server answer every later request as `mode` says (see the script: `204`, `ok`,
    /// `redirect URL`, `loop`, `content`, `huge`, `silent`).
    public func setMode(_ mode: String) throws {
        try mode.write(toFile: modeFile, atomically: true, encoding: .utf8)
    }

    /// Ends the server and deletes both namespaces. Safe to call twice.
    public func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        client.delete()
        server.delete()
        unlink(modeFile)
    }
}
