#if CommandLineTool
import ArgumentParser
import Dispatch
import Glibc
import Netlink

/// `reach`: reachability and network state of a Linux network namespace, for people and scripts.
@main
struct ReachCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reach",
        abstract: "Network reachability and link state from the Linux kernel (rtnetlink via libnl).",
        discussion: """
            Exit status: 0 success (or reachable), 1 not reachable (or a wait timed out), \
            2 bad input or an error, with one line on standard error.
            """,
        subcommands: [CheckCommand.self, WatchCommand.self, WaitCommand.self, LinksCommand.self, EventsCommand.self])

    /// Runs the tool with the contract's exit statuses: 0 and 1 from the commands, 2 with one line
    /// on standard error for anything that went wrong (argument-parser's default would be 64).
    ///
    /// `main` is synchronous: the long-running commands (`watch`, `wait`, `events`) block the
    /// main thread and never touch Swift's cooperative pool, whose libdispatch thread-pool
    /// monitor would wake the process every second. Only `check` runs asynchronously.
    static func main() {
        reserveStandardDescriptors()
        acceptTerminationSignals()
        // A closed pipe (`reach watch | head -1`) is a write error, which ends the tool with
        // status 0 (see `Output`), not a signal that kills it with 141.
        signal(SIGPIPE, SIG_IGN)
        // SIGINT and SIGQUIT end the tool as they end other Unix tools (status 130 and 131),
        // also when a shell started it in the background, which ignores both for its jobs; and
        // the Swift runtime's backtracer would take SIGQUIT for a crash, print a report and
        // leave the process running. SIGHUP keeps what it was given: `nohup reach watch` runs on.
        signal(SIGINT, SIG_DFL)
        signal(SIGQUIT, SIG_DFL)
        do {
            if let request = CheckRequest(plainArguments: CommandLine.arguments.dropFirst()) {
                let prepared = try request.prepare()
                if try request.answerWithoutResolving(prepared) { return }
                try runBlocking { try await request.answerResolving(prepared) }
                return
            }
            var command = try parseAsRoot()
            if let asyncCommand = command as? AsyncParsableCommand {
                let box = UncheckedCommand(command: asyncCommand)
                try runBlocking {
                    var command = box.command
                    try await command.run()
                }
            } else {
                try command.run()
            }
        } catch {
            exit(with: error)
        }
    }

    /// Puts `/dev/null`, read-only, on each of descriptors 0, 1 and 2 that the tool was started
    /// without (`reach check >&-`). Otherwise the first socket the tool opens would take the
    /// number 1, and its output would be written into a netlink socket; this way a write to a
    /// closed standard output fails (`EBADF`) and the tool says so and exits 2.
    private static func reserveStandardDescriptors() {
        for descriptor in STDIN_FILENO...STDERR_FILENO where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", O_RDONLY)
            if opened >= 0, opened != descriptor {
                dup2(opened, descriptor)
                close(opened)
            }
        }
    }

    /// Unblocks SIGINT, SIGTERM, SIGHUP and SIGQUIT, which a process inherits blocked when it is
    /// started from a thread that blocks them (a libdispatch worker does): `watch` and `events`
    /// run until such a signal, and the main thread, which waits in a futex, must take it.
    private static func acceptTerminationSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    /// Runs asynchronous work to its end while the main thread waits.
    ///
    /// - Throws: ``TooFewDescriptors`` when libdispatch, which runs the task, could not make the
    ///   two descriptors it needs (it traps, SIGILL, when it cannot).
    private static func runBlocking(_ work: @escaping @Sendable () async throws -> Void) throws {
        guard descriptorsAvailable(2) else { throw TooFewDescriptors() }
        let outcome = Locked<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<Void, any Error>
            do { try await work(); result = .success(()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        try outcome.withLock { $0 }!.get()
    }

    private static func exit(with error: any Error) -> Never {
        do { throw error } catch let code as ExitCode {
            Output.end(code.rawValue)
        } catch {
            if exitCode(for: error) == .success {
                print(fullMessage(for: error))
                Output.end(0)
            }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "error"
            Output.error(message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message)
            Output.end(2)
        }
    }
}

/// Whether `count` more descriptors can be opened now.
private func descriptorsAvailable(_ count: Int) -> Bool {
    var opened: [Int32] = []
    defer { for descriptor in opened { close(descriptor) } }
    for _ in 0..<count {
        let descriptor = dup(STDERR_FILENO)
        guard descriptor >= 0 else { return false }
        opened.append(descriptor)
    }
    return true
}

/// The descriptor limit (`ulimit -n`) leaves too few free to start.
private struct TooFewDescriptors: Error, CustomStringConvertible {
    var description: String {
        var limit = rlimit()
        let shown = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? " (ulimit -n is \(limit.rlim_cur))" : ""
        return "too many open files: no descriptors left to start\(shown)"
    }
}

/// Carries a parsed command into the task that runs it (parsed values are plain data).
private struct UncheckedCommand: @unchecked Sendable {
    let command: AsyncParsableCommand
}

/// The `--netns` option that every command takes.
struct NamespaceOption: ParsableArguments {
    @Option(name: .customLong("netns"),
            help: ArgumentHelp("Network namespace: a name (/run/netns/NAME, as `ip -n`) or a path.", valueName: "NAME|PATH"))
    var netns: String?

    func namespace() throws -> NetworkNamespace {
        try Self.namespace(netns)
    }

    /// The namespace that a `--netns` value names; the current one without a value.
    static func namespace(_ netns: String?) throws -> NetworkNamespace {
        guard let netns else { return .current }
        return try NetworkNamespace.parse(netns)
    }
}

/// The `--receive-buffer` option of the commands that follow the kernel's notifications.
struct SubscriptionOption: ParsableArguments {
    @Option(name: .customLong("receive-buffer"),
            help: ArgumentHelp("""
                Receive buffer of the notification socket, in bytes (default 4 MiB). A small one \
                makes the kernel drop notifications sooner: for testing how the state is re-read.
                """, valueName: "BYTES"))
    var receiveBuffer: Int?

    func validate() throws {
        if let receiveBuffer, receiveBuffer <= 0 { throw ValidationError("--receive-buffer must be a number of bytes, 1 or more") }
    }

    /// Opens the namespace's shared subscription with these options, before anything else
    /// opens it with the defaults; `followsNeighbors` adds libnl's neighbour cache.
    func openSubscription(in namespace: NetworkNamespace, followsNeighbors: Bool = false) throws -> NetlinkSubscription {
        try NetlinkSubscription.shared(namespace: namespace, options: SubscriptionOptions(
            receiveBufferSize: receiveBuffer ?? SubscriptionOptions.defaultReceiveBufferSize,
            followsNeighbors: followsNeighbors))
    }
}
#else
import Glibc

/// Built without the `CommandLineTool` trait, which brings swift-argument-parser: says how to
/// build the tool.
@main
enum ReachCommand {
    static func main() {
        let message = "reach: build it with the CommandLineTool trait: swift build --product reach --traits CommandLineTool\n"
        _ = write(STDERR_FILENO, message, message.utf8.count)
        exit(2)
    }
}
#endif
