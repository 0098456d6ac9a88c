#if CommandLineTool
import ArgumentParser
import Netlink
import LinuxReachability
import ReachabilityConnectivity

/// `reach check`: is a target reachable now, and through what?
struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Tell whether a target is reachable now, with its flags, link and gateway.",
        discussion: """
            TARGET is an IPv4 or IPv6 address (a link-local one with its link: fe80::1%eth0) or a \
            host name; without one, the internet (a default \
            route through a usable link). The answer is the kernel's route lookup (`ip route get`, \
            policy rules included) and the state of the link it picks. Host names are resolved in \
            the namespace (its /etc/netns/NAME/hosts first, then the name servers of its \
            /etc/netns/NAME/resolv.conf if it has one). With --connectivity, an HTTP probe of \
            the URL you name goes out through the answer's link: none (no usable route), \
            limited (no answer), portal (a redirect or other content) or full (the expected \
            answer). Exit status: 0 reachable (with --connectivity: full), 1 not, 2 bad input \
            or an error.
            """)

    @Argument(help: "An IPv4 or IPv6 address (fe80::1%eth0 for a link-local one) or a host name (default: the internet).")
    var target: String?

    @Flag(help: "Print one JSON object.")
    var json = false

    @OptionGroup var namespaceOption: NamespaceOption

    @OptionGroup var sysfsOption: SysfsOption

    @Flag(help: "Probe the connectivity behind the answer over HTTP (with --probe-url or $REACH_PROBE_URL).")
    var connectivity = false

    @OptionGroup var probeOptions: ProbeOptions

    func validate() throws {
        try probeOptions.validate(connectivityAsked: connectivity)
    }

    func run() async throws {
        try await CheckRequest(target: target, json: json, netns: namespaceOption.netns, sysfsRoot: sysfsOption.sysfsRoot,
                               connectivity: connectivity ? try probeOptions.probe() : nil).run()
    }
}

/// What `reach check` was asked, as plain values: from ``CheckCommand``, or read directly from
/// a plain command line (``init(plainArguments:)``).
struct CheckRequest {
    var target: String?
    var json = false
    var netns: String?
    var sysfsRoot: String?
    /// The connectivity probe to make behind a reachable answer, when asked for.
    var connectivity: ConnectivityProbe?

    /// The parsed target and the probe that answers it.
    typealias Prepared = (target: ReachabilityTarget, probe: ReachabilityProbe)

    /// Asks once, prints the answer; throws `ExitCode(1)` when the target is not reachable.
    func run() async throws {
        let prepared = try prepare()
        if try answerWithoutResolving(prepared) { return }
        try await answerResolving(prepared)
    }

    /// Parses the target and the namespace, and opens the probe.
    func prepare() throws -> Prepared {
        let parsed = try target.map { text throws(ReachabilityError) in try ReachabilityTarget(parsing: text) } ?? .internet
        let namespace = try NamespaceOption.namespace(netns)
        let sysfs = SysfsOption.source(root: sysfsRoot, namespace: namespace)
        return (parsed, try ReachabilityProbe(namespace: namespace, sysfs: sysfs, policy: try ConstrainedLinkPolicy.system()))
    }

    /// Answers on the calling thread, without a task or a queue, when the target is not a host
    /// name; false (nothing done) for a host name, which ``answerResolving(_:)`` answers.
    func answerWithoutResolving(_ prepared: Prepared) throws -> Bool {
        guard let answered = try prepared.probe.answerWithoutResolving(for: prepared.target) else { return false }
        try show(answered, in: prepared.probe.namespace)
        return true
    }

    /// Resolves the host name and answers.
    func answerResolving(_ prepared: Prepared) async throws {
        try show(try await prepared.probe.answer(for: prepared.target), in: prepared.probe.namespace)
    }

    private func show(_ answered: (answer: ReachabilityAnswer, addresses: [IPAddress]), in namespace: NetworkNamespace) throws {
        let (answer, addresses) = answered
        guard let connectivity else {
            Output.line(json ? answer.json(target: target, addresses: addresses).serialized
                             : answer.humanLine(target: target ?? "internet"))
            if !answer.isReachable { throw ExitCode(1) }
            return
        }
        let report = connectivity.check(answer, in: namespace)
        Output.line(json ? answer.json(target: target, addresses: addresses, connectivity: report).serialized
                         : answer.humanLine(target: target ?? "internet") + "  " + report.humanText)
        if report.connectivity != .full { throw ExitCode(1) }
    }
}

extension CheckRequest {
    /// The request of `reach check` arguments (`arguments` without the tool's name) when they are
    /// plain: `check`, then at most one target that does not start with `-`, `--json` and
    /// `--netns NAME` (or `--netns=NAME`), each at most once. Anything else (help, other options,
    /// `--`, a repeated option, a missing or odd value) is nil and left to swift-argument-parser,
    /// which then gives its own answer or error.
    // Read by hand for start-up: swift-argument-parser's parse was most of a check's work (BENCHMARKS.md).
    init?(plainArguments arguments: some Collection<String>) {
        guard arguments.first == "check" else { return nil }
        var rest = arguments.dropFirst()[...]
        while let argument = rest.popFirst() {
            if argument == "--json" {
                guard !json else { return nil }
                json = true
            } else if argument == "--netns" || argument.hasPrefix("--netns=") {
                guard netns == nil else { return nil }
                let value = argument == "--netns" ? rest.popFirst() : String(argument.dropFirst("--netns=".count))
                guard let value, !value.isEmpty, !value.hasPrefix("-") else { return nil }
                netns = value
            } else if !argument.isEmpty, !argument.hasPrefix("-"), argument != "help", target == nil {
                target = argument
            } else {
                return nil
            }
        }
    }
}

extension ReachabilityAnswer {
    /// The contract's `check` object.
    func json(target: String?, addresses: [IPAddress]) -> JSON {
        .object([
            ("target", .string(target)),
            ("addresses", .array(addresses.map { .string($0.description) })),
            ("reachable", .bool(isReachable)),
            ("status", .string(status.description)),
            ("flags", .array(flags.names.map(JSON.string))),
            ("rawFlags", .int(flags.rawValue)),
            ("interface", interface.map { interface in
                .object([("name", .string(interface.name)), ("index", .int(interface.index)),
                         ("type", .string(interface.type.description)), ("kind", .string(interface.classification.kind.rawValue)),
                         ("expensive", .bool(interface.classification.isExpensive)),
                         ("constrained", .bool(interface.classification.isConstrained))])
            } ?? .null),
            ("gateway", .string(gateway?.description)),
            ("reason", .string(reason?.description)),
        ])
    }

    /// Such as `10.0.0.2: reachable  reachableViaWired  -R ------d  dev veth0 (wiredEthernet)`.
    func humanLine(target: String) -> String {
        var bytes: [UInt8] = []
        writeHumanLine(target: target, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``humanLine(target:)`` to `out`, field by field: `reach watch` writes a line per
    /// change into a buffer it keeps, and building it by string interpolation cost a third of
    /// the instructions between the kernel's message and the line (callgrind,
    /// `Benchmarks/profiles/instructions_per_flip.sh`).
    func writeHumanLine<Sink: ByteSink>(target: String, into out: inout Sink) {
        out.append(utf8: target)
        if isReachable { out.append(": reachable  ") } else { out.append(": not reachable  ") }
        out.append(utf8: status.description)
        out.append("  ")
        out.append(utf8: flags.compactDescription)
        if let interface {
            out.append("  dev ")
            out.append(utf8: interface.name)
            out.append(" (")
            out.append(utf8: interface.type.description)
            out.append(UInt8(ascii: ")"))
        }
        if let gateway {
            out.append("  via ")
            out.appendAddress(gateway)
        }
        if let address {
            let text = address.description
            if text != target {
                out.append("  address ")
                out.append(utf8: text)
            }
        }
        if let reason {
            out.append("  (")
            out.append(utf8: reason.description)
            out.append(UInt8(ascii: ")"))
        }
    }
}
#endif
