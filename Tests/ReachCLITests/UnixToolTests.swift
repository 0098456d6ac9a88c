import Foundation
import NetnsTestSupport
import Testing

/// `reach` fails and ends as a Unix tool does: under a tiny descriptor limit every command
/// exits 0, 1 or 2 with its answer or one error line (never a trap and a crash report); the
/// termination signals end `watch` and `events` with 128 plus the signal's number, also when a
/// shell started them in the background (which ignores SIGINT and SIGQUIT for its jobs); an
/// error quotes a name with control characters instead of breaking its line.
@Suite("reach as a Unix tool", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct UnixToolTests {
    @Test func everyCommandUnderATinyDescriptorLimitAnswersOrFailsWithOneLine() throws {
        let ns = try TestNamespace("fdlimit")
        defer { ns.delete() }
        let commands = [["check", "10.1.0.9"], ["check", "--json"], ["links"], ["links", "--json"],
                        ["watch", "10.1.0.9"], ["events"], ["wait", "10.1.0.9", "--timeout", "0"]]
        for limit in 4...8 {
            for command in commands {
                // Each long-running command that starts is ended by `timeout` (status 124).
                let script = "ulimit -n \(limit); exec timeout -s KILL 5 \"$0\" \"$@\" --netns \(ns.name)"
                let result = try run(["bash", "-c", script, reachBinary] + command, check: false)
                let errorLines = result.error.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                #expect([0, 1, 2, 124, 137].contains(result.status), "ulimit -n \(limit) \(command): status \(result.status)")
                #expect(errorLines.count <= 1 && !result.error.contains("Backtracing") && !result.output.contains("swift-backtrace"),
                        "ulimit -n \(limit) \(command): \(result.error)")
                if result.status == 2 {
                    #expect(result.output.isEmpty && result.error.hasPrefix("reach: "), "ulimit -n \(limit) \(command)")
                }
            }
        }
    }

    @Test(arguments: [("QUIT", 131), ("TERM", 143), ("INT", 130), ("HUP", 129)])
    func aTerminationSignalEndsWatchAndEvents(signal: String, status: Int32) throws {
        let ns = try TestNamespace("signal")
        defer { ns.delete() }
        for command in ["watch 10.1.0.9", "events"] {
            // In the background of a non-interactive shell, as a script runs it; the signal goes
            // once the first line is out.
            let script = """
                out=$(mktemp); "$0" \(command) --netns \(ns.name) > "$out" 2>"$out.err" & pid=$!
                for i in $(seq 100); do [ -s "$out" ] && break; sleep 0.1; done
                kill -\(signal) $pid; wait $pid; status=$?
                echo "$status $(wc -l < "$out.err")"; rm -f "$out" "$out.err"
                """
            let result = try run(["timeout", "30", "bash", "-c", script, reachBinary], check: false)
            let fields = result.output.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            #expect(fields.first == String(status), "SIG\(signal) \(command): \(result.output)\(result.error)")
            #expect(fields.last == "0", "SIG\(signal) \(command): nothing on standard error")
        }
    }

    @Test func errorsQuoteNamesWithControlCharacters() throws {
        for arguments in [["check", "10.1.0.9", "--netns", "a\nb"], ["links", "--netns", "/tmp/a\nb"],
                          ["watch", "10.1.0.9", "--netns", "a\u{1b}[31mb"], ["links", "--sysfs-root", "/x\ny"]] {
            let result = try run([reachBinary] + arguments, check: false)
            #expect(result.status == 2 && result.output.isEmpty, "\(arguments)")
            #expect(result.error.split(separator: "\n").count == 1 && result.error.contains("\\u{"), "\(arguments): \(result.error)")
        }
    }
}
