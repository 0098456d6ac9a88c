import ArgumentParser
import Glibc
import Netlink

/// `reach`: reachability and network state of a Linux network namespace, for people and scripts.
@main
struct ReachCommand: AsyncParsableCommand {
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
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            Glibc.exit(code.rawValue)
        } catch {
            if exitCode(for: error) == .success {
                print(fullMessage(for: error))
                Glibc.exit(0)
            }
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? "error"
            Output.error(message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message)
            Glibc.exit(2)
        }
    }
}

/// The `--netns` option that every command takes.
struct NamespaceOption: ParsableArguments {
    @Option(name: .customLong("netns"),
            help: ArgumentHelp("Network namespace: a name (/run/netns/NAME, as `ip -n`) or a path.", valueName: "NAME|PATH"))
    var netns: String?

    func namespace() throws -> NetworkNamespace {
        guard let netns else { return .current }
        return try NetworkNamespace.parse(netns)
    }
}
