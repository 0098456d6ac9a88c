#if CommandLineTool
import ArgumentParser
import Glibc
import Netlink
import LinuxReachability

/// `reach links`: every link of a namespace with its type, state and addresses.
struct LinksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "links",
        abstract: "List the links of a namespace with their type, state and addresses.",
        discussion: """
            The type and kind come from the link classifier: rtnetlink facts plus sysfs (the \
            namespace's own sysfs, or the tree given by --sysfs-root). Links matching the rules \
            in REACH_CONSTRAINED_LINKS (or the file REACH_CONSTRAINED_LINKS_FILE, or \
            /etc/reach/constrained-links) are reported as constrained.
            """)

    @Flag(help: "Print one JSON array.")
    var json = false

    @OptionGroup var namespaceOption: NamespaceOption

    @OptionGroup var sysfsOption: SysfsOption

    func run() throws {
        let namespace = try namespaceOption.namespace()
        let connection = try NetlinkConnection(namespace: namespace)
        let state = NetworkState(links: try connection.links(), addresses: try connection.addresses(), defaultRoutes: [])
        let classifier = LinkClassificationCache(source: sysfsOption.source(namespace: namespace),
                                                 policy: try ConstrainedLinkPolicy.system())
        // Classified once, without the cache's bookkeeping: measurably faster (BENCHMARKS.md).
        let classifications = classifier.classificationsOnce(of: Array(state.links.values))
        let links = state.sortedLinks.map { ($0, classifications[$0.index] ?? LinkClassifier.classify(LinkFacts(link: $0))) }
        if json {
            var out = JSONWriter()
            out.beginArray()
            for (link, classification) in links {
                out.beginObject()
                link.writeJSONSummaryFields(classification, to: &out)
                out.key("addresses"); out.value(names: state.addresses(ofLink: link.index).map(\.cidr))
                out.key("altnames"); out.value(names: link.alternativeNames)
                out.endObject()
            }
            out.endArray()
            out.newline()
            out.withBytes(Output.lines)
            return
        }
        for (link, classification) in links {
            let condition = link.isRunning ? "running" : link.isUp ? "up, no carrier" : "down"
            Output.line("\(link.index): \(link.name)  \(classification)  \(condition)  operstate \(link.operState)")
            for name in link.alternativeNames { Output.line("    altname \(name)") }
            for address in state.addresses(ofLink: link.index) {
                Output.line("    \(address.cidr)  scope \(address.scope)")
            }
        }
    }
}

/// The `--sysfs-root` option of the commands that classify links.
struct SysfsOption: ParsableArguments {
    @Option(name: .customLong("sysfs-root"),
            help: ArgumentHelp("Root of the sysfs tree to read link facts from (default: the namespace's own /sys).", valueName: "DIR"))
    var sysfsRoot: String?

    func source(namespace: NetworkNamespace) -> SysfsSource {
        Self.source(root: sysfsRoot, namespace: namespace)
    }

    /// Where `namespace`'s link facts come from: the tree a `--sysfs-root` value names, or the
    /// namespace's own sysfs without one.
    static func source(root: String?, namespace: NetworkNamespace) -> SysfsSource {
        root.map { SysfsSource(root: $0, namespace: namespace) } ?? .live(namespace)
    }

    func validate() throws {
        guard let sysfsRoot else { return }
        guard !sysfsRoot.isEmpty else { throw ValidationError("--sysfs-root must not be empty") }
        var status = stat()
        guard stat(sysfsRoot, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw ValidationError("--sysfs-root must be a directory: \(displayed(sysfsRoot))")
        }
    }
}
#endif
