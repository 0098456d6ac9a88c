import Foundation
import Glibc
import NetnsTestSupport
import Testing

/// `reach` on random argument vectors: subcommand names, flags, options with good and bad
/// values (addresses, namespace names and paths, huge and negative numbers, NaN), random ASCII
/// and Unicode, in random order.
///
/// Property: every run ends by itself within seconds, by `exit` (never a signal); a vector that
/// holds bad input (the generator puts one "poison" in every vector but a clean `links` or an
/// empty one) exits with status 2, writes nothing on standard output and exactly one line on
/// standard error (`reach: ...`, no control characters); a clean vector exits 0; a request for
/// help exits 0 or 2.
///
/// Safety: no vector can make `reach` resolve a name or touch another namespace. Every token but
/// the subcommand is checked not to be a host name unless it is an IP literal (a number for an
/// option is written `+0.5`, never `0.5`); namespace values are invalid names, names of no
/// namespace, or paths that are no namespace file; `watch`, `wait` and `events` always carry a
/// poison, so they stop at the bad input. The suite does not need root and changes nothing.
/// `REACH_FUZZ_SEED=N` replays a run; the seed is in every failure message.
@Suite("reach: random arguments")
struct ArgumentFuzzTests {
    // MARK: Safety checks on tokens

    /// An address literal, as glibc's `inet_pton` reads one.
    static func isIPLiteral(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return !text.utf8.contains(0) && (inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1)
    }

    /// A token `reach` could take for a host name (the RFC 1123 oracle) and resolve: never
    /// generated.
    static func couldBeResolved(_ token: String) -> Bool { isRFC1123HostName(token) && !isIPLiteral(token) }

    // MARK: The generator

    /// One argument vector and what it should do.
    struct Vector: CustomStringConvertible {
        var arguments: [String]
        /// Holds bad input: exit status 2.
        var poisoned: Bool
        /// Asks for help somewhere: 0 or 2.
        var asksForHelp: Bool {
            arguments.first == "help" || arguments.contains { token in
                token == "--help" || (token.hasPrefix("-") && !token.hasPrefix("--") && token.contains("h"))
            }
        }
        var description: String { "reach " + arguments.map(\.debugDescription).joined(separator: " ") }
    }

    static let ipLiterals = ["1.2.3.4", "192.0.2.1", "0.0.0.0", "255.255.255.255", "::1", "::", "2001:db8::1",
                             "::ffff:192.0.2.1", "fe80::1"]
    /// Targets that are neither addresses nor host names (an argument cannot hold NUL).
    static let badTargets = ["", " ", "a b", "ü.example", "[::1", "1.2.3.4/8", "fe80::1%", "10.0.0.1%eth0", "1..2", "127.1", "0x7f.1", "a\u{1b}[31m",
                             "tab\there", "new\nline", "cr\rx", "del\u{7f}", "nel\u{85}x", "ls\u{2028}x", "😀",
                             String(repeating: "x", count: 64), String(repeating: "a.", count: 127) + "a",
                             String(repeating: "é", count: 5_000), "-", "-1", "-x"]
    /// Namespace values that fail: invalid names, names of no namespace, paths of no namespace file.
    static let badNamespaces = ["", ".", "..", "a/../..", "no such namespace", "ns?\(UInt32.random(in: 0...UInt32.max))",
                                String(repeating: "n", count: 256), "/nonexistent/netns", "/", "./", "/dev/null",
                                "/etc/hostname", "/run/netns/", "é\u{1}\u{7f}", "/" + String(repeating: "p", count: 5_000)]
    static let badSeconds = ["-1", "-0", "+nan", "-nan", "+inf", "-inf", "+1e309", "abc d", "", " ", "½", "+0x", "1 2", "٣"]
    static let badBytes = ["-1", "-0", "+0", "+99999999999999999999999", "+1.5", "", "x y", "+", "١٠"]
    static let subcommands = ["check", "watch", "wait", "links", "events"]

    /// Random text that is not a host name, of any ASCII but NUL or any Unicode scalar.
    static func junk(_ rng: inout SeededGenerator) -> String {
        while true {
            let length = Int.random(in: 0...12, using: &rng)
            let unicode = Bool.random(using: &rng)
            let scalars = (0..<length).compactMap { _ in
                Unicode.Scalar(unicode ? UInt32.random(in: 1...0x10_FFFF, using: &rng) : UInt32.random(in: 1...127, using: &rng))
            }
            let text = String(String.UnicodeScalarView(scalars))
            if !couldBeResolved(text) { return text }
        }
    }

    /// A piece of bad input; the option it uses, if any; whether it must come last.
    static func poison(_ rng: inout SeededGenerator) -> (tokens: [String], option: String?, last: Bool) {
        switch Int.random(in: 0...8, using: &rng) {
        case 0: return (["--netns", badNamespaces.randomElement(using: &rng)!], "--netns", false)
        case 1: return (["--timeout", badSeconds.randomElement(using: &rng)!], "--timeout", false)
        case 2: return (["--receive-buffer", badBytes.randomElement(using: &rng)!], "--receive-buffer", false)
        case 3: return (["--sysfs-root", ["", "/nonexistent", "/dev/null"].randomElement(using: &rng)!], "--sysfs-root", false)
        case 4: return (["--no-such-option"], nil, false)
        case 5: return ([["--netns", "--timeout", "--receive-buffer", "--sysfs-root"].randomElement(using: &rng)!], nil, true)
        case 6: return (["--", ["-1", "--json", "-h", "--help", "a b"].randomElement(using: &rng)!], nil, true)
        case 7: return ([badTargets.randomElement(using: &rng)!], nil, false)
        default: return ([junk(&rng)].map { $0.isEmpty || $0.hasPrefix("-") ? $0 : "-" + $0 }, nil, false)
        }
    }

    /// A piece that is fine on its own (the right command may still refuse it).
    static func benign(_ rng: inout SeededGenerator) -> (tokens: [String], option: String?) {
        switch Int.random(in: 0...7, using: &rng) {
        case 0, 1: return (["--json"], nil)
        case 2: return ([ipLiterals.randomElement(using: &rng)!], nil)
        case 3: return (["--sysfs-root", ["/", "/proc/self", "/tmp"].randomElement(using: &rng)!], "--sysfs-root")
        case 4: return (["--timeout", ["+0.05", "+1e9", "+0"].randomElement(using: &rng)!], "--timeout")
        case 5: return (["--receive-buffer", ["+1", "+4096", "+4194304"].randomElement(using: &rng)!], "--receive-buffer")
        case 6: return ([junk(&rng)], nil)
        default: return ([["--help", "-h"].randomElement(using: &rng)!], nil)
        }
    }

    /// A random vector: a subcommand (or none, or junk), then up to four benign pieces and one
    /// poison in random order. Only `links` and the empty vector may go without poison.
    static func vector(_ rng: inout SeededGenerator) -> Vector {
        var head: [String]
        switch Int.random(in: 0...9, using: &rng) {
        case 0...5: head = [subcommands.randomElement(using: &rng)!]
        case 6: head = ["links"]
        case 7: head = ["help"]
        case 8: head = [junk(&rng)]
        default: head = []
        }
        // Without poison: `links` with what it takes, or nothing at all (the usage, status 0).
        let clean = (head == ["links"] || head.isEmpty) && Int.random(in: 0...2, using: &rng) == 0
        if clean && head.isEmpty { return Vector(arguments: [], poisoned: false) }
        var pieces: [[String]] = []
        var used: Set<String> = []
        var tail: [String] = []
        if !clean {
            let bad = poison(&rng)
            if bad.last { tail = bad.tokens } else { pieces.append(bad.tokens) }
            if let option = bad.option { used.insert(option) }
        }
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            let piece = benign(&rng)
            // A clean `links` gets only what `links` takes; no option appears twice, so a
            // benign value never overrides a poisoned one.
            if clean && !(piece.tokens == ["--json"] || piece.option == "--sysfs-root") { continue }
            if let option = piece.option { guard used.insert(option).inserted else { continue } }
            pieces.append(piece.tokens)
        }
        pieces.shuffle(using: &rng)
        return Vector(arguments: head + pieces.flatMap { $0 } + tail, poisoned: !clean)
    }

    // MARK: Running `reach`

    struct Outcome {
        var status: Int32
        var bySignal: Bool
        var output: String
        var error: String
    }

    /// Runs `reach` with `arguments` and no input; nil if it had to be killed after `seconds`.
    static func runReach(_ arguments: [String], seconds: Double = 10) throws -> Outcome? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: reachBinary)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let reading = DispatchGroup()
        nonisolated(unsafe) var output = Data(), error = Data()
        DispatchQueue.global().async(group: reading) { output = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: reading) { error = err.fileHandleForReading.readDataToEndOfFile() }
        guard exited.wait(timeout: .now() + seconds) == .success else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            reading.wait()
            return nil
        }
        reading.wait()
        return Outcome(status: process.terminationStatus, bySignal: process.terminationReason == .uncaughtSignal,
                       output: String(decoding: output, as: UTF8.self), error: String(decoding: error, as: UTF8.self))
    }

    /// True for a message that shows as one line: no control characters, no line separators.
    static func isOneClearLine(_ text: String) -> Bool {
        !text.isEmpty && !text.unicodeScalars.contains { scalar in
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: return true
            default: return false
            }
        }
    }

    /// Runs one vector and checks the property.
    static func check(_ vector: Vector, seed: UInt64, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let context = "\(vector) (REACH_FUZZ_SEED=\(seed))"
        // The generator's safety promise, checked before anything runs.
        let named = vector.arguments.first.map { subcommands.contains($0) || $0 == "help" } ?? false
        let unsafe = vector.arguments.dropFirst(named ? 1 : 0).filter(couldBeResolved)
        guard unsafe.isEmpty else {
            Issue.record("generator made a resolvable token \(unsafe): \(context)", sourceLocation: sourceLocation)
            return
        }
        guard let outcome = try runReach(vector.arguments) else {
            Issue.record("reach did not end within 10 s: \(context)", sourceLocation: sourceLocation)
            return
        }
        #expect(!outcome.bySignal, "killed by signal \(outcome.status): \(context)", sourceLocation: sourceLocation)
        if vector.asksForHelp {
            #expect(outcome.status == 0 || outcome.status == 2, "status \(outcome.status): \(context)", sourceLocation: sourceLocation)
        } else {
            #expect(outcome.status == (vector.poisoned ? 2 : 0),
                    "status \(outcome.status), stderr \(outcome.error.debugDescription): \(context)", sourceLocation: sourceLocation)
        }
        guard outcome.status == 2 else { return }
        let lines = outcome.error.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty && lines[0].hasPrefix("reach: ") && lines[0].count > "reach: ".count
                    && isOneClearLine(String(lines[0])),
                "stderr \(outcome.error.debugDescription): \(context)", sourceLocation: sourceLocation)
        #expect(outcome.output.isEmpty, "stdout \(outcome.output.prefix(200).debugDescription): \(context)",
                sourceLocation: sourceLocation)
    }

    // MARK: The tests

    /// Inputs known to be tricky for the tool; each must give status 2 and one clear line.
    static let corpus: [[String]] = [
        ["check", "--no-such-option"], ["check", "--a\u{1b}[31mred"], ["check", "--a\rb"], ["check", "--a\nb"],
        ["check", "--a\u{85}b"], ["check", "--a\u{2028}b"], ["links", "-\u{7}"], ["links", "é"],
        ["check", "a b"], ["check", "--", "-1"], ["check", "1.2.3.4", "192.0.2.1"],
        ["check", "10.0.0.1%eth0"], ["check", "fe80::1%a b"], ["check", "del\u{7f}"], ["check", "nel\u{85}x"],
        ["check", "--netns", ".."], ["check", "--netns", ""], ["links", "--netns", String(repeating: "n", count: 256)],
        ["links", "--netns", "/nonexistent/netns"], ["links", "--netns", "/dev/null"], ["links", "--netns"],
        ["links", "--netns", "a\u{1}b"], ["links", "--netns", "/" + String(repeating: "p", count: 5_000)],
        ["links", "--sysfs-root", ""], ["links", "--sysfs-root", "/nonexistent"], ["links", "--sysfs-root", "/dev/null"],
        ["check", "127.1"], ["check", "0x7f.1"], ["wait", "--timeout", "-1"], ["wait", "--timeout", "+nan"],
        ["wait", "--timeout", "+inf"], ["wait", "--timeout", "+1e309"], ["watch", "--receive-buffer", "+0"],
        ["events", "--receive-buffer", "+99999999999999999999999"], ["events", "--receive-buffer", "-1"],
        ["watch", "1.2.3.4", "a b"], ["events", "1.2.3.4"], ["nosuchcommand?"], ["--json"], ["check", String(repeating: "é", count: 5_000)],
    ]

    @Test func corpusExitsWithStatus2AndOneLine() throws {
        for arguments in Self.corpus {
            try Self.check(Vector(arguments: arguments, poisoned: true), seed: 0)
        }
        // Help and a clean `links` succeed.
        try Self.check(Vector(arguments: [], poisoned: false), seed: 0)
        try Self.check(Vector(arguments: ["links", "--json", "--sysfs-root", "/tmp"], poisoned: false), seed: 0)
        #expect(try Self.runReach(["check", "--help"])?.status == 0)
    }

    @Test func randomVectorsExitWith0Or2AndOneLine() throws {
        let seed = ProcessInfo.processInfo.environment["REACH_FUZZ_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        var rng = SeededGenerator(seed: seed)
        var poisoned = 0
        for _ in 0..<250 {
            let vector = Self.vector(&rng)
            if vector.poisoned { poisoned += 1 }
            try Self.check(vector, seed: seed)
        }
        // The generator really mixes bad and clean vectors.
        #expect(poisoned > 150 && poisoned < 250, "\(poisoned) poisoned of 250 (REACH_FUZZ_SEED=\(seed))")
    }
}
