import Foundation
import NetnsTestSupport
import Testing

/// The exit statuses of the contract at the edges of `reach`'s input and output: a closed pipe,
/// a standard output that cannot be written, a wait with no time left or more time than the
/// clock counts, numbers that are not address literals, a sysfs root that is not a directory.
@Suite("reach at the edges of its input and output", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct OutputEdgeTests {
    /// A namespace whose loopback is up: 127.0.0.1 is reachable, 198.51.100.1 has no route.
    private func loopbackNamespace(_ label: String) throws -> TestNamespace {
        let ns = try TestNamespace(label)
        try ns.ip("link", "set", "lo", "up")
        return ns
    }

    @Test func waitLooksAtTheAnswerEvenWithNoTimeLeft() throws {
        let ns = try loopbackNamespace("edgewait")
        defer { ns.delete() }
        #expect(try reach("wait", "127.0.0.1", "--timeout", "0", "--netns", ns.name).status == 0)
        #expect(try reach("wait", "198.51.100.1", "--timeout", "0", "--netns", ns.name).status == 1)
        // More seconds than the clock counts in nanoseconds: no deadline, not a crash.
        for huge in ["1e10", "9223372037", "1e300"] {
            let result = try reach("wait", "127.0.0.1", "--timeout", huge, "--netns", ns.name)
            #expect(result.status == 0 && result.error.isEmpty, "--timeout \(huge): \(result.status) \(result.error)")
        }
    }

    /// `reach watch | head -1`: once the reader is gone, the next line ends the tool with
    /// status 0, not with SIGPIPE (141 in a shell with `pipefail`).
    /// Starts `reach` with `arguments`, its standard output a pipe, and reads its first line.
    private func reachAndItsFirstLine(_ arguments: [String]) throws -> (process: Process, output: Pipe, first: String) {
        let out = Pipe()
        let process = try launchReach(arguments, output: out)
        var first = Data()
        while !first.contains(UInt8(ascii: "\n")) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            first.append(chunk)
        }
        return (process, out, String(decoding: first, as: UTF8.self))
    }

    @Test func aClosedPipeEndsWatchWithStatusZero() throws {
        let ns = try loopbackNamespace("edgepipe")
        defer { ns.delete() }
        let (process, out, first) = try reachAndItsFirstLine(["watch", "127.0.0.1", "--json", "--netns", ns.name])
        defer { if process.isRunning { process.terminate() } }
        #expect(first.contains("\"reachable\":true"))
        try out.fileHandleForReading.close()
        try ns.ip("link", "set", "lo", "down")  // a change: the next line meets the closed pipe
        #expect(eventually { !process.isRunning })
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
    }

    /// `reach watch | head -1` and `reach events | head -1` in a namespace where nothing changes
    /// after the first line: the reader's going ends the tool (status 0) without a next line.
    @Test func aReaderThatGoesEndsWatchAndEventsInAQuietNamespace() throws {
        let ns = try loopbackNamespace("edgequiet")
        defer { ns.delete() }
        for arguments in [["watch", "127.0.0.1"], ["events"]] {
            let (process, out, first) = try reachAndItsFirstLine(arguments + ["--netns", ns.name])
            defer { if process.isRunning { process.terminate() } }
            #expect(!first.isEmpty)
            try out.fileHandleForReading.close()
            #expect(eventually { !process.isRunning }, "\(arguments[0]) outlived its reader")
            process.waitUntilExit()
            #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(arguments[0])")
        }
    }

    /// A standard output that cannot take the answer (a full device, a closed descriptor) is an
    /// error: status 2 and one line on standard error, never the answer written elsewhere.
    @Test func anOutputThatCannotBeWrittenIsOneLineAndStatusTwo() throws {
        let ns = try loopbackNamespace("edgefull")
        defer { ns.delete() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: reachBinary)
        process.arguments = ["check", "127.0.0.1", "--netns", ns.name]
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/full")
        let err = Pipe()
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        let full = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationStatus == 2)
        #expect(full.hasPrefix("reach: cannot write to standard output: ") && full.filter { $0 == "\n" }.count == 1, "\(full)")

        let closed = try run(["sh", "-c", "exec \"$0\" check 127.0.0.1 --netns \"$1\" >&-", reachBinary, ns.name], check: false)
        #expect(closed.status == 2)
        #expect(closed.error.hasPrefix("reach: cannot write to standard output: ") && closed.error.filter { $0 == "\n" }.count == 1,
                "\(closed.error)")
    }

    /// What the system resolver would read as an IPv4 address in `inet_aton`'s shorthand is
    /// neither an address literal nor a host name: refused, never looked up.
    @Test func numbersThatAreNotAddressLiteralsAreRefused() throws {
        for text in ["127.1", "010.0.0.1", "999.1.1.1", "0x7f.1"] {
            let result = try reach("check", text)
            #expect(result.status == 2 && result.output.isEmpty, "\(text): \(result.status) \(result.output)")
            #expect(result.error == "reach: not an IP address or host name: \"\(text)\"\n", "\(text): \(result.error)")
        }
    }

    @Test func aSysfsRootMustBeADirectory() throws {
        for root in ["/nonexistent-sysfs-root", "/dev/null"] {
            let result = try reach("links", "--sysfs-root", root)
            #expect(result.status == 2 && result.output.isEmpty)
            #expect(result.error == "reach: --sysfs-root must be a directory: \(root)\n", "\(result.error)")
        }
    }
}
