import Foundation
import NetnsTestSupport
import Synchronization
import Testing

/// `reach` run by an ordinary user: reading state and following changes need no privilege,
/// entering another namespace does, and the error says which capability is missing.
///
/// The test process stays root (it builds the namespaces); only the `reach` processes drop
/// privileges, inside a test namespace: `ip netns exec NS setpriv --reuid=65534 --regid=65534
/// --clear-groups --inh-caps=-all -- reach ...`. Changing the real and effective user from 0 to
/// 65534 clears the permitted and effective capabilities, and `--inh-caps=-all` the inheritable
/// (and with them the ambient) ones; ``theReachProcessesHaveNoPrivilege()`` checks this through
/// `/proc/self/status`. Every namespace is a ``TestNamespace`` and is deleted afterwards.
@Suite("reach as an ordinary user", .enabled(if: namespacesAvailable && setprivAvailable, "needs root, iproute2 and setpriv"))
struct UnprivilegedTests {
    /// An address behind the test namespace's default route (no traffic is ever sent to it).
    private static let remote = "10.99.1.1"

    /// `reach check` as nobody and as root (through `--netns`) give the same answer.
    @Test func checkAnswersAsItDoesForRoot() throws {
        try withUnprivilegedBed("upcheck") { bed in
            let asNobody = try bed.reach("check", Self.remote, "--json")
            let asRoot = try reach("check", Self.remote, "--json", "--netns", bed.namespace.name)
            #expect(asNobody.status == 0, "\(asNobody.error)")
            #expect(asNobody.error.isEmpty)
            #expect(asNobody.status == asRoot.status)
            let mine = try jsonObject(asNobody.output)
            let roots = try jsonObject(asRoot.output)
            #expect(mine == roots, "nobody: \(asNobody.output)root: \(asRoot.output)")
            #expect(mine["reachable"] as? Bool == true)
            #expect((mine["interface"] as? NSDictionary)?["name"] as? String == "veth0")
            #expect(mine["gateway"] as? String == "10.77.0.254")

            // And a negative answer agrees too: without carrier on veth0 nothing is reachable.
            try bed.namespace.ip("link", "set", "veth1", "down")
            #expect(eventually { (try? bed.reach("check", Self.remote).status) == 1 })
            let downAsNobody = try bed.reach("check", Self.remote, "--json")
            let downAsRoot = try reach("check", Self.remote, "--json", "--netns", bed.namespace.name)
            #expect(downAsNobody.status == 1 && downAsRoot.status == 1)
            #expect(try jsonObject(downAsNobody.output) == jsonObject(downAsRoot.output))
        }
    }

    /// `reach links --json` as nobody lists exactly the links of `ip -j link`, with the addresses
    /// `ip -j address` shows, and says the same about them as root does.
    @Test func linksListsWhatIPAddressShows() throws {
        try withUnprivilegedBed("uplinks") { bed in
            let result = try bed.reach("links", "--json")
            #expect(result.status == 0, "\(result.error)")
            #expect(result.error.isEmpty)
            let links = try #require(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]])
            let expected = try bed.namespace.ipJSON("address", "show")
            #expect(Set(links.compactMap { $0["name"] as? String }) == Set(expected.compactMap { $0["ifname"] as? String }))
            #expect(links.count == expected.count)
            for entry in expected {
                let name = try #require(entry["ifname"] as? String)
                let link = try #require(links.first { $0["name"] as? String == name }, "link \(name)")
                let flags = entry["flags"] as? [String] ?? []
                #expect(link["index"] as? Int == entry["ifindex"] as? Int, "\(name)")
                #expect(link["up"] as? Bool == flags.contains("UP"), "\(name)")
                let addresses = (entry["addr_info"] as? [[String: Any]] ?? []).map { "\($0["local"]!)/\($0["prefixlen"]!)" }
                #expect(Set(link["addresses"] as? [String] ?? []) == Set(addresses), "\(name)")
            }
            #expect(links.first { $0["name"] as? String == "veth0" }?["addresses"] as? [String] == ["10.77.0.1/24"])
            #expect(links.first { $0["name"] as? String == "veth0" }?["kind"] as? String == "veth")

            // Root, entering the namespace itself (setns and its own sysfs view), says the same.
            let asRoot = try reach("links", "--json", "--netns", bed.namespace.name)
            #expect(asRoot.status == 0, "\(asRoot.error)")
            #expect(try jsonArray(result.output) == jsonArray(asRoot.output), "nobody: \(result.output)root: \(asRoot.output)")
        }
    }

    /// `reach events --json` as nobody prints the snapshot, then a change made from outside
    /// (`ip -n NS link set veth0 down`). Its notification socket asks for 4 MiB: without
    /// `CAP_NET_ADMIN`, `SO_RCVBUFFORCE` fails and the library falls back to `SO_RCVBUF`.
    @Test func eventsPrintsTheSnapshotThenAChange() throws {
        try withUnprivilegedBed("upevents") { bed in
            let events = try bed.start("events", "--json")
            defer { events.stop() }
            #expect(events.waitForLine(containing: "\"event\":\"synchronized\""), "\(events.errors)")
            #expect(events.lines.withLock { $0.contains { $0.contains("\"present\"") && $0.contains("\"name\":\"veth0\"") } })
            #expect(events.lines.withLock { $0.contains { $0.contains("\"present\"") && $0.contains("10.77.0.1/24") } })
            try bed.namespace.ip("link", "set", "veth0", "down")
            #expect(events.waitForLine(containing: "\"event\":\"changed\"", "\"object\":\"link\"", "\"name\":\"veth0\"", "\"up\":false"),
                    "\(events.lines.withLock { $0 })")
            #expect(events.isRunning, "reach events keeps running as nobody")
            #expect(events.errors.isEmpty)
        }
    }

    /// `reach watch ADDRESS` as nobody prints the answer at once, then a line when carrier loss
    /// on the default route's link makes the address unreachable.
    @Test func watchPrintsTheAnswerThenAChange() throws {
        try withUnprivilegedBed("upwatch") { bed in
            let watch = try bed.start("watch", Self.remote, "--json")
            defer { watch.stop() }
            #expect(eventually { watch.objects().count == 1 }, "\(watch.errors)")
            #expect(watch.objects().first?["reachable"] as? Bool == true)
            #expect(watch.objects().first?["target"] as? String == Self.remote)
            try bed.namespace.ip("link", "set", "veth1", "down")
            #expect(eventually { watch.objects().count == 2 }, "\(watch.lines.withLock { $0 })")
            #expect(watch.objects().last?["reachable"] as? Bool == false)
            #expect(watch.isRunning, "reach watch keeps running as nobody")
            #expect(watch.errors.isEmpty)
        }
    }

    /// Every command given another namespace (`--netns`) fails as nobody with status 2 and one
    /// line on stderr that names the missing capability: `CAP_SYS_ADMIN` for entering a
    /// namespace, `CAP_SYS_PTRACE` for opening another user's `/proc/PID/ns/net`.
    @Test func anotherNamespaceNeedsCapSysAdmin() throws {
        try withUnprivilegedBed("upother") { bed in
            let other = try TestNamespace("upotherns")
            defer { other.delete() }
            for command in [["links"], ["links", "--json"], ["check", Self.remote], ["events"], ["watch", Self.remote],
                            ["wait", Self.remote, "--timeout", "1"]] {
                let result = try bed.reach(command + ["--netns", other.name])
                #expect(result.status == 2, "\(command): \(result.output)")
                let lines = result.error.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                #expect(lines.count == 1, "\(command): \(result.error)")
                #expect(result.error.hasPrefix("reach: entering network namespace \"\(other.name)\" needs CAP_SYS_ADMIN"),
                        "\(command): \(result.error)")
                #expect(result.error.contains("(setns: Operation not permitted)"), "\(command): \(result.error)")
                #expect(result.output.isEmpty, "\(command)")
            }
            // A path to the namespace fails the same way; init's namespace file cannot even be
            // opened by another user.
            let byPath = try bed.reach("links", "--netns", other.path)
            #expect(byPath.status == 2 && byPath.error.contains("needs CAP_SYS_ADMIN"), "\(byPath.error)")
            let initsNamespace = try bed.reach("links", "--netns", "/proc/1/ns/net")
            #expect(initsNamespace.status == 2)
            #expect(initsNamespace.error.split(separator: "\n").count == 1, "\(initsNamespace.error)")
            #expect(initsNamespace.error.contains("needs CAP_SYS_PTRACE") && initsNamespace.error.contains("Permission denied"),
                    "\(initsNamespace.error)")
        }
    }

    /// The `reach` processes really run as uid and gid 65534 with no capability at all, and the
    /// binary they run is one that user can execute.
    @Test func theReachProcessesHaveNoPrivilege() throws {
        try withUnprivilegedBed("upsanity") { bed in
            let status = try bed.namespace.exec(unprivileged + ["cat", "/proc/self/status"]).output
            let fields = Dictionary(status.split(separator: "\n").compactMap { line -> (String, String)? in
                guard let colon = line.firstIndex(of: ":") else { return nil }
                return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }, uniquingKeysWith: { first, _ in first })
            #expect(fields["Uid"]?.split(separator: "\t").allSatisfy { $0 == "65534" } == true, "\(fields["Uid"] ?? "")")
            #expect(fields["Gid"]?.split(separator: "\t").allSatisfy { $0 == "65534" } == true, "\(fields["Gid"] ?? "")")
            #expect(fields["Groups"] == "")
            for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
                #expect(fields[set] == "0000000000000000", "\(set): \(fields[set] ?? "missing")")
            }
            #expect(try bed.namespace.exec(unprivileged + ["test", "-x", bed.binary], check: false).status == 0)
            // In the namespace, as nobody: `ip netns exec` mounted the namespace's own sysfs.
            #expect(try bed.reach("links").status == 0)
        }
    }
}

/// True when util-linux's `setpriv` is installed (the tests drop privileges with it).
let setprivAvailable: Bool = (try? run(["setpriv", "--version"], check: false).status) == 0

/// The command prefix that runs the rest of a command line as uid and gid 65534 (nobody), with
/// no supplementary groups and no capabilities.
let unprivileged = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--"]

/// A test namespace with a veth pair (`veth0` 10.77.0.1/24 up, its peer `veth1` up, so `veth0`
/// has carrier; neither gets an IPv6 link-local address) and a default route via 10.77.0.254 on `veth0`, plus a `reach` binary that
/// uid 65534 can execute.
final class UnprivilegedBed {
    /// The namespace the unprivileged `reach` processes run in.
    let namespace: TestNamespace
    /// The `reach` binary they run: ``reachBinary`` itself when nobody can execute it there,
    /// otherwise a copy (mode 0755) in a temporary directory (mode 0755).
    let binary: String
    private let temporaryDirectory: String?

    /// Builds the namespace and finds or makes an executable `reach` for nobody.
    init(_ label: String) throws {
        namespace = try TestNamespace(label)
        do {
            // No IPv6 link-local addresses: they would appear at a moment of their own.
            try namespace.batch(["link add veth0 type veth peer name veth1", "link set veth0 addrgenmode none",
                                 "link set veth1 addrgenmode none", "link set veth0 up", "link set veth1 up",
                                 "address add 10.77.0.1/24 dev veth0", "route add default via 10.77.0.254 dev veth0"])
            if try run(unprivileged + ["test", "-x", reachBinary], check: false).status == 0 {
                binary = reachBinary
                temporaryDirectory = nil
            } else {
                // Some directory on the way is closed to other users (/root, say).
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("reach-nobody-\(UUID())").path
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false,
                                                        attributes: [.posixPermissions: 0o755])
                temporaryDirectory = directory
                binary = directory + "/reach"
                try FileManager.default.copyItem(atPath: reachBinary, toPath: binary)
                try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: binary)
            }
        } catch {
            namespace.delete()
            throw error
        }
        // Carrier on veth0 comes a moment after both ends are up.
        _ = eventually { (try? namespace.ipJSON("link", "show", "dev", "veth0").first?["flags"] as? [String])?.contains("LOWER_UP") == true }
    }

    /// Deletes the namespace and the copied binary, if any.
    func delete() {
        namespace.delete()
        if let temporaryDirectory { try? FileManager.default.removeItem(atPath: temporaryDirectory) }
    }

    deinit { delete() }

    /// The command line that runs `reach ARGUMENTS...` as nobody inside the namespace.
    func commandLine(_ arguments: [String]) -> [String] {
        ["ip", "netns", "exec", namespace.name] + unprivileged + [binary] + arguments
    }

    /// Runs `reach ARGUMENTS...` as nobody inside the namespace, to completion.
    func reach(_ arguments: String...) throws -> CommandResult { try reach(arguments) }

    /// Runs `reach ARGUMENTS...` as nobody inside the namespace, to completion.
    func reach(_ arguments: [String]) throws -> CommandResult {
        try run(["timeout", "--kill-after=5", "60"] + commandLine(arguments), check: false)
    }

    /// Starts a long-running `reach ARGUMENTS...` as nobody inside the namespace.
    func start(_ arguments: String...) throws -> LineReader {
        try LineReader(["timeout", "--kill-after=5", "120"] + commandLine(arguments))
    }
}

/// Runs `body` with a fresh ``UnprivilegedBed`` and deletes it afterwards, also when `body`
/// throws or an expectation fails.
func withUnprivilegedBed<T>(_ label: String, _ body: (UnprivilegedBed) throws -> T) throws -> T {
    let bed = try UnprivilegedBed(label)
    defer { bed.delete() }
    return try body(bed)
}

/// A long-running command (wrapped in `timeout`, so it cannot outlive a broken test by long),
/// read line by line on standard output, with standard error kept. ``stop()`` ends it by its
/// process id: SIGTERM to the process group that `timeout` leads, since `timeout` itself
/// inherits SIGTERM blocked from the test's thread and would only pass it on at its deadline.
final class LineReader: Sendable {
    private let process: Process
    private let errorText = Mutex<String>("")
    /// Every line printed on standard output so far.
    let lines = Mutex<[String]>([])

    /// Starts `arguments` (looked up in PATH).
    init(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        self.process = process
        try process.run()
        let output = out.fileHandleForReading, errors = err.fileHandleForReading
        forEachLine(of: output) { [weak self] line in self?.lines.withLock { $0.append(line) } }
        Thread.detachNewThread { [weak self] in
            while true {
                let chunk = errors.availableData
                if chunk.isEmpty { return }
                self?.errorText.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
            }
        }
    }

    /// Everything written to standard error so far.
    var errors: String { errorText.withLock { $0 } }

    /// True while the process runs.
    var isRunning: Bool { process.isRunning }

    /// The lines that are JSON objects.
    func objects() -> [[String: Any]] {
        lines.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits (bounded, for liveness only) until a line contains every fragment.
    func waitForLine(containing fragments: String...) -> Bool {
        awaitLine(in: lines, containing: fragments)
    }

    /// Ends the process (SIGTERM to the process group it leads, or to its pid if it has not
    /// made its group yet) and waits for it.
    func stop() {
        if process.isRunning, kill(-process.processIdentifier, SIGTERM) != 0 {
            kill(process.processIdentifier, SIGTERM)
        }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Decodes one JSON object (the output of `reach check --json`) for comparison.
private func jsonObject(_ text: String) throws -> NSDictionary {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try #require(object as? NSDictionary, "not a JSON object: \(text)")
}

/// Decodes one JSON array (the output of `reach links --json`) for comparison.
private func jsonArray(_ text: String) throws -> NSArray {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try #require(object as? NSArray, "not a JSON array: \(text)")
}
