#if CommandLineTool
import ArgumentParser
import Dispatch
import Netlink
import LinuxReachability

/// `reach events`: every link, address and route change of a namespace, one line each.
struct EventsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print link, address and route events of a namespace as they happen.",
        discussion: """
            The current state comes first (one `present` line per link, address and default route, \
            then `synchronized`), then one line per change (links, addresses, routes, policy \
            rules), flushed at once. After lost \
            notifications the state is re-read and a `resynchronized` line follows the differences.
            """)

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @Flag(help: "Also print the neighbour table's entries and their changes (ARP and NDP).")
    var neighbors = false

    @OptionGroup var namespaceOption: NamespaceOption
    @OptionGroup var subscriptionOption: SubscriptionOption

    /// The observation lives as long as the process prints.
    private static let keepAlive = Locked<NetlinkObservation?>(nil)

    func run() throws {
        let namespace = try namespaceOption.namespace()
        let subscription = try subscriptionOption.openSubscription(in: namespace, followsNeighbors: neighbors)
        let printer = EventPrinter(json: json, classifier: LinkClassificationCache(
            source: .live(namespace), policy: try ConstrainedLinkPolicy.system()))
        // Lines are printed on the subscription's own thread as each read is parsed: no queue
        // hop, and one write(2) for the lines of one batch. A consumer that stops reading
        // blocks that thread; the kernel then drops notifications and the stream goes on with
        // `resynchronized`.
        let ended = Locked<NetlinkError?>(nil)
        let done = DispatchSemaphore(value: 0)
        let observation = subscription.observeBatchesOnSubscriptionThread(onTermination: { error in
            ended.withLock { $0 = error }
            done.signal()
        }) { events in
            printer.print(events, names: subscription.state)
        }
        EventsCommand.keepAlive.withLock { $0 = observation }
        Output.exitWhenTheReaderGoes()
        // The main thread sleeps in a futex until the subscription ends.
        done.wait()
        Output.error(ended.withLock { $0 }?.description ?? "the subscription ended")
        throw ExitCode(2)
    }
}

/// Turns events into lines.
struct EventPrinter: Sendable {
    let json: Bool
    /// Classifies links for their `type` and `kind`; reads sysfs only for new or renamed links.
    let classifier: LinkClassificationCache
    /// The bytes of a batch, kept from one batch to the next: under a churn the loop wakes for a
    /// message or two, and a buffer of its own per batch cost two allocations and, for a large
    /// batch, the copies of its growth.
    private let lines: Locked<LineBuffer>

    /// A printer of JSON lines or of lines for people.
    init(json: Bool, classifier: LinkClassificationCache) {
        self.json = json
        self.classifier = classifier
        lines = Locked(LineBuffer(json: json))
    }

    /// Prints the lines of one batch of events with one write, then lets the reader run if the
    /// tool had been quiet (see ``Output/yieldToReader()``). `state` is the namespace's state
    /// after the batch, which names the links of addresses and routes.
    func print(_ events: [NetlinkEvent], names state: NetworkState) {
        lines.withLock { out in
            out.removeAll()
            for event in events { render(event, names: state, into: &out) }
            out.withBytes(Output.lines)
        }
        Output.yieldToReader()
    }

    private func render(_ event: NetlinkEvent, names state: NetworkState, into out: inout LineBuffer) {
        func emit(_ event: StaticString, _ object: StaticString, _ value: @autoclosure () -> JSON,
                  old: @autoclosure () -> JSON? = nil, human: @autoclosure () -> String) {
            self.emit(event, object, { $0.value(value()) }, old: old().map { old in { $0.value(old) } },
                      human: human(), into: &out)
        }
        func emit(_ event: StaticString, link: Link, old: Link? = nil, human: @autoclosure () -> String) {
            guard json else { return self.emit(event, "link", { _ in }, old: nil, human: human(), into: &out) }
            // Classified once for both versions of a changed link.
            let classification = self.classification(link, state)
            self.emit(event, "link", { link.writeJSON(classification, to: &$0) },
                      old: old.map { old in { old.writeJSON(classification, to: &$0) } }, human: "", into: &out)
        }
        func emit(_ event: StaticString, route: Route, old: Route? = nil) {
            self.emit(event, "route", route.writeJSON, old: old.map { $0.writeJSON },
                      human: describe(route, state: state), into: &out)
        }
        func line(_ text: String) { out.append(text) }
        switch event {
        case .snapshot(let snapshot):
            let classifications = classifier.classifications(ofLinksIn: snapshot)
            for link in snapshot.sortedLinks {
                self.emit("present", "link", { link.writeJSON(classification(link, classifications), to: &$0) }, old: nil,
                          human: describe(link), into: &out)
            }
            for address in snapshot.addresses.values.sorted(by: { ($0.linkIndex, $0.address) < ($1.linkIndex, $1.address) }) {
                emit("present", "address", address.json, human: describe(address, state: snapshot))
            }
            for route in snapshot.sortedDefaultRoutes {
                self.emit("present", "route", route.writeJSON, old: nil, human: describe(route, state: snapshot), into: &out)
            }
            for neighbor in snapshot.neighbors.values.sorted(by: { ($0.linkIndex, $0.address) < ($1.linkIndex, $1.address) }) {
                emit("present", "neighbor", neighbor.json, human: neighbor.description)
            }
            if json { out.appendObject(header: "synchronized", nil) { _ in } } else { line("synchronized") }
        case .link(let change):
            switch change {
            case .new(let link): emit("new", link: link, human: describe(link))
            case .removed(let link): emit("removed", link: link, human: describe(link))
            case .changed(let old, let new):
                emit("changed", link: new, old: old, human: describe(new) + "  (was " + linkDifference(old, new) + ")")
            }
        case .address(let change):
            switch change {
            case .new(let a): emit("new", "address", a.json, human: describe(a, state: state))
            case .removed(let a): emit("removed", "address", a.json, human: describe(a, state: state))
            case .changed(let old, let new): emit("changed", "address", new.json, old: old.json, human: describe(new, state: state))
            }
        case .route(let change):
            switch change {
            case .new(let r): emit("new", route: r)
            case .replaced(let r): emit("replaced", route: r)
            case .removed(let r): emit("removed", route: r)
            case .changed(let old, let new): emit("changed", route: new, old: old)
            }
        case .configuration(let change):
            switch change {
            case .new(let c): emit("new", "netconf", c.json, human: c.description)
            case .removed(let c): emit("removed", "netconf", c.json, human: c.description)
            case .changed(let old, let new): emit("changed", "netconf", new.json, old: old.json, human: new.description)
            }
        case .neighbor(let change):
            switch change {
            case .new(let n): emit("new", "neighbor", n.json, human: n.description)
            case .removed(let n): emit("removed", "neighbor", n.json, human: n.description)
            case .changed(let old, let new): emit("changed", "neighbor", new.json, old: old.json, human: new.description)
            }
        case .rulesChanged(let family):
            if json {
                out.appendObject(header: "changed", "rules") { $0.key("family"); $0.value(family.description) }
            } else {
                line("changed rules \(family)")
            }
        case .resynchronized(let reason):
            if json {
                out.appendObject(header: "resynchronized", nil) { $0.key("reason"); $0.value(reason.description) }
            } else {
                line("resynchronized (\(reason))")
            }
        }
    }

    /// Adds one event line. Only the form asked for is built: the JSON value is written by
    /// `value` (and `old`) into the line, and the human text is evaluated lazily.
    private func emit(_ event: StaticString, _ object: StaticString, _ value: (inout JSONWriter) -> Void,
                      old: ((inout JSONWriter) -> Void)?, human: @autoclosure () -> String, into out: inout LineBuffer) {
        if json {
            out.appendObject(header: event, object) { line in
                line.key(object)
                value(&line)
                if let old {
                    line.key("old")
                    old(&line)
                }
            }
        } else {
            out.append("\(event) \(object) \(human())")
        }
    }

    /// The link's classification among the namespace's links; a removed link is classified
    /// with them one last time (its sysfs facts are still cached). While no link changed what
    /// it is, this costs one comparison (the state's link revision), not one per link.
    private func classification(_ link: Link, _ state: NetworkState) -> LinkClassification {
        guard state.links[link.index] == nil else {
            return classification(link, classifier.classifications(ofLinksIn: state))
        }
        var links = state.links
        links[link.index] = link
        return classification(link, classifier.classifications(of: links.values))
    }

    private func classification(_ link: Link, _ classifications: [Int32: LinkClassification]) -> LinkClassification {
        classifications[link.index] ?? LinkClassifier.classify(LinkFacts(link: link))
    }

    private func describe(_ link: Link) -> String {
        "\(link.index) \(link.name)\(link.kind.map { " (\($0))" } ?? "") \(link.flags) operstate \(link.operState) mtu \(link.mtu)"
    }

    private func linkDifference(_ old: Link, _ new: Link) -> String {
        var parts: [String] = []
        if old.name != new.name { parts.append("name \(old.name)") }
        if old.flags != new.flags { parts.append("flags \(old.flags)") }
        if old.operState != new.operState { parts.append("operstate \(old.operState)") }
        if old.mtu != new.mtu { parts.append("mtu \(old.mtu)") }
        if old.masterIndex != new.masterIndex { parts.append("master \(old.masterIndex.map(String.init) ?? "none")") }
        if old.alternativeNames != new.alternativeNames {
            parts.append("altnames " + (old.alternativeNames.isEmpty ? "none" : old.alternativeNames.joined(separator: " ")))
        }
        return parts.isEmpty ? "other attributes" : parts.joined(separator: ", ")
    }

    private func describe(_ address: InterfaceAddress, state: NetworkState) -> String {
        "\(address.cidr) dev \(state.links[address.linkIndex]?.name ?? "#\(address.linkIndex)") scope \(address.scope) \(address.flags)"
    }

    private func describe(_ route: Route, state: NetworkState) -> String {
        var text = route.description
        if let index = route.outputLinkIndex, let name = state.links[index]?.name {
            text = text.replacing("dev #\(index)", with: "dev \(name)")
        }
        return text
    }
}

/// The lines of one batch, as the bytes that will be written: JSON is written straight into
/// them, with no string in between.
struct LineBuffer {
    private var writer: JSONWriter

    /// Calls `body` with the lines so far (valid only during the call).
    func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try writer.withBytes(body)
    }

    init(json: Bool) {
        writer = JSONWriter(capacity: json ? 1024 : 256)
    }

    /// Forgets the lines so far, keeping the room.
    mutating func removeAll() { writer.removeAll() }

    /// Adds a JSON line: `{"time":…,"event":…,"object":…` (no object for whole-stream events),
    /// then the fields that `fields` writes, then `}`.
    mutating func appendObject(header event: StaticString, _ object: StaticString?, _ fields: (inout JSONWriter) -> Void) {
        writer.beginObject()
        writer.key("time"); writer.valueNow()
        writer.key("event"); writer.value(event)
        if let object { writer.key("object"); writer.value(object) }
        fields(&writer)
        writer.endObject()
        writer.newline()
    }

    /// Adds a text line.
    mutating func append(_ text: String) {
        writer.append(line: text)
    }
}
#endif
