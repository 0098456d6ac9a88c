import Foundation
import NetnsTestSupport
import Testing

/// `reach` at the limits of descriptors and threads, and with a namespace path that is a FIFO:
/// it either runs or exits 2 with one line naming the call that failed, never dies of a signal
/// or waits forever. Found by a helper's review: with exactly one descriptor left, libnl 3.7's
/// cache manager aborted the process (exit 134); without a thread to start, a precondition
/// killed it (132); a FIFO at the namespace's path blocked the open forever.
@Suite("reach at the limits of its resources", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct ResourceLimitTests {
    /// Runs `command`; returns how it ended within `seconds` (nil: still running, then killed).
    private func outcome(_ command: [String], within seconds: Double = 1.5) throws -> (Process.TerminationReason, Int32, String)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let errors = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationReason, process.terminationStatus, message)
    }

    @Test func everyDescriptorLimitEndsInATypedErrorOrRuns() throws {
        let ns = try TestNamespace("rlimit")
        defer { ns.delete() }
        for limit in 4...14 {
            for arguments in [["events", "--json"], ["watch", "127.0.0.1"], ["events", "--json", "--netns", ns.name],
                              ["watch", "10.9.0.5", "--netns", ns.name]] {
                let command = ["/usr/bin/prlimit", "--nofile=\(limit):\(limit)", reachBinary] + arguments
                guard let (reason, status, message) = try outcome(command) else { continue }
                let shown = "nofile \(limit), reach \(arguments.joined(separator: " ")): \(message.debugDescription)"
                #expect(reason == .exit && status == 2, "\(shown) ended with \(reason == .exit ? "status" : "signal") \(status)")
                #expect(message.hasPrefix("reach: ") && message.filter { $0 == "\n" }.count == 1, "\(shown)")
            }
        }
    }

    /// Eight threads open subscriptions of 50 namespaces under each descriptor limit: every one
    /// opens or fails with a typed error, and the process ends normally (libnl 3.7 aborted it in
    /// every such run before its cache managers were created under one lock).
    @Test func concurrentOpensUnderDescriptorLimitsNeverAbort() throws {
        let namespaces = try (0..<50).map { _ in try TestNamespace("press") }
        defer { namespaces.forEach { $0.delete() } }
        let tool = URL(fileURLWithPath: reachBinary).deletingLastPathComponent().appendingPathComponent("open-under-pressure").path
        for limit in [20, 24, 32, 48, 64, 96, 128, 192, 256] {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.arguments = ["--nofile=\(limit):\(limit)", tool] + namespaces.map(\.name)
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationReason == .exit && process.terminationStatus == 0,
                    "limit \(limit): ended with \(process.terminationReason == .exit ? "status" : "signal") \(process.terminationStatus)")
            let counts = printed.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            #expect(counts.count == 2 && counts.reduce(0, +) == 8 * namespaces.count, "limit \(limit): \(printed)")
            if limit == 256 { #expect(counts.first ?? 0 > 0, "some open at 256: \(printed)") }
        }
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv"))
    func noThreadToStartIsATypedError() throws {
        // One process for the user: the subscription's thread cannot start.
        let command = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                       "/usr/bin/prlimit", "--nproc=1", reachBinary, "events", "--json"]
        let ended = try outcome(command, within: 5)
        #expect(ended?.0 == .exit && ended?.1 == 2, "\(String(describing: ended))")
        #expect(ended?.2.contains("start a thread") == true, "\(String(describing: ended?.2))")
    }

    @Test func aFIFOWhereTheNamespaceShouldBeIsRefused() throws {
        let fifo = NSTemporaryDirectory() + "reach-fifo-\(getpid())"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let ended = try outcome([reachBinary, "check", "127.0.0.1", "--netns", fifo], within: 5)
        #expect(ended?.0 == .exit && ended?.1 == 2, "\(String(describing: ended))")
        #expect(ended?.2.contains("not a network namespace") == true)
    }
}
