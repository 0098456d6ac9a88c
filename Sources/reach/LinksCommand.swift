import ArgumentParser
import Netlink
import Reachability

/// `reach links`: every link of a namespace with its type, state and addresses.
struct LinksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "links",
        abstract: "List the links of a namespace with their type, state and addresses.")

    @Flag(help: "Print one JSON array.")
    var json = false

    @OptionGroup var namespaceOption: NamespaceOption

    @Option(name: .customLong("sysfs-root"), help: ArgumentHelp("Root of the sysfs tree to read link facts from.", valueName: "DIR"))
    var sysfsRoot: String = "/sys"

    func run() throws {
        let connection = try NetlinkConnection(namespace: try namespaceOption.namespace())
        let state = NetworkState(links: try connection.links(), addresses: try connection.addresses(), defaultRoutes: [])
        let links = state.sortedLinks
        if json {
            Output.line(JSON.array(links.map { link in
                let type = InterfaceType(arphrdType: link.arphrdType)
                return JSON.object([
                    ("name", .string(link.name)), ("index", .int(link.index)),
                    ("type", .string(type.description)), ("kind", .string(link.kind)),
                    ("arphrd", .int(link.arphrdType.rawValue)), ("operState", .string(link.operState.description)),
                    ("up", .bool(link.isUp)), ("running", .bool(link.isRunning)),
                    ("expensive", .bool(false)),
                    ("addresses", .array(state.addresses(ofLink: link.index).map { .string($0.cidr) })),
                ])
            }).serialized)
            return
        }
        for link in links {
            let type = InterfaceType(arphrdType: link.arphrdType)
            let condition = link.isRunning ? "running" : link.isUp ? "up, no carrier" : "down"
            var line = "\(link.index): \(link.name)  \(type)"
            if let kind = link.kind { line += " (\(kind))" }
            line += "  \(condition)  operstate \(link.operState)"
            Output.line(line)
            for address in state.addresses(ofLink: link.index) {
                Output.line("    \(address.cidr)  scope \(address.scope)")
            }
        }
    }
}
