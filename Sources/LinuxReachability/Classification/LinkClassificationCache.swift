import Glibc
import Netlink

/// Where a ``LinkClassificationCache`` reads sysfs facts.
package enum SysfsSource: Sendable, Hashable {
    /// The live `/sys` as seen from a network namespace. For a namespace other than the
    /// current one the cache mounts a private sysfs for it once (`NetworkNamespace.openSysfs()`)
    /// and reads it while it shows the namespace that the name or path leads to, which needs
    /// `CAP_SYS_ADMIN`; without it the links get no sysfs evidence, and each read tries the
    /// mount again. Like every read by name, it follows the name: a namespace deleted and made
    /// again under it is read as the new one. An entry whose `IFINDEX` disagrees with the link
    /// (renamed in between) is ignored.
    case live(NetworkNamespace)
    /// A sysfs tree under a directory, such as a fixture (`reach --sysfs-root DIR`). It is read
    /// as it is, whatever the namespace.
    case tree(root: String)

    /// `.live(namespace)` for the system's `/sys` (however written: `/sys/`, `//sys`, a link to
    /// it), else `.tree(root:)`: the live sysfs shows the links of the namespace that mounted
    /// it, so another namespace's must be mounted for it.
    package init(root: String, namespace: NetworkNamespace) {
        var canonical = root
        if let resolved = realpath(root, nil) {
            canonical = String(cString: resolved)
            free(resolved)
        }
        self = canonical == "/sys" ? .live(namespace) : .tree(root: root)
    }
}

/// Classifies the links of one namespace and keeps the answers.
///
/// A link's sysfs facts are read once and kept until its name, rtnetlink kind, link type or
/// master changes, or until ``invalidate(linkIndex:)``. Classifications are recomputed only
/// when some link's facts changed (a stacked link depends on its lower links and ports); a call
/// with unchanged links returns the kept answers without touching sysfs. Thread-safe.
public final class LinkClassificationCache: Sendable {
    /// Where sysfs facts come from.
    package let source: SysfsSource
    /// The constrained-link policy applied to every answer.
    package let policy: ConstrainedLinkPolicy

    private struct State {
        var sysfs: [Int32: (key: LinkFacts.SysfsKey, facts: SysfsFacts)] = [:]
        var facts: [Int32: LinkFacts] = [:] {
            didSet { keys = facts.mapValues(LinkFacts.RtnetlinkKey.init) }
        }
        /// The rtnetlink part of `facts`, by index: what the common case compares.
        private(set) var keys: [Int32: LinkFacts.RtnetlinkKey] = [:]
        /// The link revision of the subscription state that `classifications` were last
        /// confirmed for (`NetworkState.linkRevision`), if any.
        var linkRevision: UInt64?
        var classifications: [Int32: LinkClassification] = [:]
        /// The link revision that `partial` belongs to, and the classifications asked of
        /// `classifications(ofLinksIn:needed:)` since the links last changed (with what they
        /// stack on).
        var partialRevision: UInt64?
        var partial: [Int32: LinkClassification] = [:]
        /// Every link of `partialRevision`'s state by index, port and name, once one was needed.
        var partialSource: LinkSource?
        /// The same for the latest revision older than `partialRevision` that was asked for.
        var older: (revision: UInt64, source: LinkSource)?
        /// Another namespace's sysfs, kept open (``SysfsSource/live(_:)``).
        var sysfsDirectory: SysfsDirectory?
        var sysfsReads = 0
        var linksReadFromSysfs = 0
        var sysfsEntriesRead = 0
        var lastSysfsError: NetlinkError?
    }
    private let state = Locked(State())

    /// A cache for the links of `namespace`, reading its live sysfs.
    ///
    /// Links are marked constrained by the rules of `REACH_CONSTRAINED_LINKS` or `REACH_CONSTRAINED_LINKS_FILE`
    /// (see <doc:ClassifyingLinks>), as the monitors mark them.
    public convenience init(namespace: NetworkNamespace = .current) {
        self.init(source: .live(namespace), policy: (try? ConstrainedLinkPolicy.system()) ?? .none)
    }

    /// A cache reading sysfs from `source` and applying `policy`.
    package init(source: SysfsSource = .live(.current), policy: ConstrainedLinkPolicy = .none) {
        self.source = source
        self.policy = policy
    }

    /// The classification of every link in `links`, by interface index. Links absent from
    /// `links` are forgotten.
    public func classifications(of links: some Collection<Link>) -> [Int32: LinkClassification] {
        classifications(of: links, linkRevision: nil)
    }

    /// The classification of every link of a subscription's state. With a link revision it
    /// costs one comparison when no link was added, removed or changed since the last call
    /// (links only going up or down); without one, it is ``classifications(of:)``. This runs
    /// in every evaluation round: comparing every link cost about 1 300 instructions per link,
    /// 1.2 million for each flip in a namespace of 1 000 links.
    package func classifications(ofLinksIn network: NetworkState) -> [Int32: LinkClassification] {
        if let revision = network.linkRevision,
           let kept = state.withLock({ $0.linkRevision == revision ? $0.classifications : nil }) {
            return kept
        }
        return classifications(of: network.links.values, linkRevision: network.linkRevision)
    }

    /// The classification of the links in `needed` that a subscription's state has (and of
    /// those asked for before while its links stayed what they were), reading sysfs only for
    /// them and what they stack on: a monitor needs only the links its answers go out through,
    /// and reading sysfs for every link was most of its start-up in a namespace of 1 000 links.
    /// Another namespace's sysfs is mounted once and kept open for that (see
    /// ``SysfsSource/live(_:)``). With the state's link revision unchanged and the links
    /// known, it costs a lookup per needed link. After a change of the links the kept answers
    /// are made again, with the needed ones, in one pass (sysfs is read again only for links
    /// whose name, kind, master or type changed). A state older than the kept answers (a
    /// query's, read before a round's) is answered on its own, leaving them. A state without a
    /// link revision (built by hand) gets ``classifications(of:)`` of all its links.
    ///
    /// The engine uses only this; ``classifications(of:)`` and
    /// ``classifications(ofLinksIn:)`` keep answers of their own (the sysfs facts are shared).
    package func classifications(ofLinksIn network: NetworkState, needed: some Sequence<Int32>) -> [Int32: LinkClassification] {
        guard let revision = network.linkRevision else { return classifications(of: network.links.values, linkRevision: nil) }
        let kept = state.withLock { state -> KeptOrMissing in
            if let current = state.partialRevision, revision < current {
                return .older(state.older?.revision == revision ? state.older?.source : nil)
            }
            var wanted: Set<Int32> = []
            if state.partialRevision != revision {
                // Revisions only grow: the links changed since the kept answers were made.
                wanted = Set(state.partial.keys)
                state.partialRevision = revision
                state.partial = [:]
                state.partialSource = nil
                // The facts of links that went away are forgotten.
                state.sysfs = state.sysfs.filter { network.links[$0.key] != nil }
            }
            for index in needed where state.partial[index] == nil { wanted.insert(index) }
            let missing = wanted.compactMap { network.links[$0] }
            return missing.isEmpty ? .answered(state.partial) : .missing(missing, state.partialSource)
        }
        switch kept {
        case .answered(let answers):
            return answers
        case .older(let kept):
            // One link source for the latest older revision: a round that runs on while a
            // query sees newer links asks with its older state again and again.
            let source = kept ?? LinkSource(everyLink: network.links.values)
            if kept == nil { state.withLock { $0.older = (revision, source) } }
            return classifications(of: needed.compactMap { network.links[$0] }, from: source)
        case .missing(let missing, let kept):
            // Every link of the revision by index, port and name, made once per revision.
            let source = kept ?? LinkSource(everyLink: network.links.values)
            let answers = classifications(of: missing, from: source)
            return state.withLock { state in
                guard state.partialRevision == revision else { return answers }
                state.partial.merge(answers) { _, new in new }
                if state.partialSource == nil { state.partialSource = source }
                return state.partial
            }
        }
    }

    /// What `classifications(ofLinksIn:needed:)` finds kept: every needed link's answer, or
    /// the needed links without one.
    private enum KeptOrMissing {
        case answered([Int32: LinkClassification])
        /// The links to classify, and the revision's link source if one was made.
        case missing([Link], LinkSource?)
        /// The state is older than the kept answers; the link source of its revision, if kept.
        case older(LinkSource?)
    }

    private func classifications(of links: some Collection<Link>, linkRevision: UInt64?) -> [Int32: LinkClassification] {
        // The common case, a link going up or down or a route changing: the same links with the
        // same rtnetlink facts as last time (and so the same sysfs facts: they are kept per name,
        // kind, master and link type), answered from what is kept with nothing allocated. It
        // runs in every evaluation round, for every link of the namespace: only keys are compared.
        let unchanged = state.withLock { state -> [Int32: LinkClassification]? in
            guard links.count == state.keys.count, !links.isEmpty else { return nil }
            for link in links {
                guard let kept = state.keys[link.index], kept.matches(link) else { return nil }
            }
            state.linkRevision = linkRevision
            return state.classifications
        }
        if let unchanged { return unchanged }
        return withCurrentFacts(of: links) { facts, state in
            var current: [Int32: LinkFacts] = [:]
            for link in facts { current[link.index] = link }
            if current != state.facts {
                state.sysfs = state.sysfs.filter { current[$0.key] != nil }
                state.facts = current
                state.classifications = LinkClassifier.classify(current.values, policy: policy)
            }
            state.linkRevision = linkRevision
            return state.classifications
        }
    }

    /// The classification of the links in `needed` among `links` (their namespace's links),
    /// reading sysfs only for those and for what their answers depend on: a VLAN's or
    /// macvlan's lower link, a bridge's or bond's ports, and so on down. The answers are the
    /// ones ``classifications(of:)`` gives for these links; the other links are neither read
    /// nor classified, and nothing is forgotten.
    ///
    /// For the internet's one-shot answers (``ReachabilityProbe``; an address's asks the
    /// kernel for each link instead): in a namespace of 1 000 links, `reach check` read some
    /// 5 000 sysfs files to answer with one link.
    package func classifications(of needed: some Sequence<Int32>,
                                among links: some Collection<Link>) -> [Int32: LinkClassification] {
        let source = LinkSource(everyLink: links)
        return classifications(of: needed.compactMap { source.link($0) }, from: source)
    }

    /// Where ``classifications(of:from:)`` finds the links that answers depend on: by index
    /// (a lower link), as the ports of a link (a bridge's, a bond's), and by name (a lower link
    /// that only sysfs names). A list of every link answers from memory; a `ReachabilityProbe`
    /// asks the kernel for each (`NetlinkConnection.link(index:)`, `links(masteredBy:)`,
    /// `link(named:)`), so that a one-shot answer costs the same with 3 links or 1 000.
    package struct LinkSource {
        /// The link with this index, if any.
        package var link: (Int32) -> Link?
        /// The links whose master this link is.
        package var ports: (Int32) -> [Link]
        /// The link with this name, if any.
        package var named: (String) -> Link?

        /// A source from these three lookups.
        package init(link: @escaping (Int32) -> Link?, ports: @escaping (Int32) -> [Link],
                     named: @escaping (String) -> Link?) {
            self.link = link
            self.ports = ports
            self.named = named
        }

        /// A source that answers from `links`, every link of the namespace (by name: a link's
        /// name, as sysfs's lower-link entries give it).
        package init(everyLink links: some Collection<Link>) {
            let byIndex = Dictionary(links.map { ($0.index, $0) }, uniquingKeysWith: { _, last in last })
            var ports: [Int32: [Link]] = [:]
            for link in links {
                if let master = link.masterIndex { ports[master, default: []].append(link) }
            }
            let byName = Dictionary(links.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
            self.init(link: { byIndex[$0] }, ports: { ports[$0] ?? [] }, named: { byName[$0] })
        }
    }

    /// The classification of `needed`, reading sysfs only for those and for what their answers
    /// depend on, which `source` gives: the answers ``classifications(of:among:)`` gives when
    /// its list holds every link.
    package func classifications(of needed: [Link], from source: LinkSource) -> [Int32: LinkClassification] {
        // What the needed links' answers depend on, found from rtnetlink facts; then, in
        // another pass, the lower links that only sysfs names (`SysfsFacts.lowerLinkNames`).
        var closure: [Int32: Link] = [:]
        var pending = needed
        var facts: [LinkFacts] = []
        for _ in 0..<LinkClassifier.maximumStackDepth {
            while let link = pending.popLast() {
                guard closure[link.index] == nil else { continue }
                closure[link.index] = link
                if LinkClassifier.lowerLinkMayDecideType(ofKind: link.kind), let lower = LinkFacts.lowerLinkIndex(of: link),
                   closure[lower] == nil, let below = source.link(lower) {
                    pending.append(below)
                }
                if LinkClassifier.portsMayDecideType(ofKind: link.kind) {
                    pending.append(contentsOf: source.ports(link.index).filter { closure[$0.index] == nil })
                }
            }
            facts = withCurrentFacts(of: closure.values) { facts, _ in facts }
            let known = Set(closure.values.map(\.name))
            pending = facts.flatMap { $0.sysfs.lowerLinkNames.filter { !known.contains($0) }.compactMap { source.named($0) } }
                .filter { closure[$0.index] == nil }
            if pending.isEmpty { break }
        }
        return LinkClassifier.classify(facts, policy: policy).filter { closure[$0.key] != nil }
    }

    /// The classification of every link in `links`, read and classified once and not kept:
    /// for a caller that asks once (`reach links`), which the cache's bookkeeping would only
    /// slow down. The answers are those of ``classifications(of:)``.
    package func classificationsOnce(of links: [Link]) -> [Int32: LinkClassification] {
        let read = readSysfs(of: links)
        state.withLock { $0.lastSysfsError = read.error }
        return LinkClassifier.classify(links.map { LinkFacts(link: $0, sysfs: read.facts[$0.index] ?? .absent) }, policy: policy)
    }

    /// The classification of one link among `links` (its namespace's links, which stacked
    /// links are resolved against), or `nil` if it is not among them.
    public func classification(of link: Link, among links: some Collection<Link>) -> LinkClassification? {
        classifications(of: links)[link.index]
    }

    /// Forgets the sysfs facts of one link, or of every link when `linkIndex` is `nil`, so the
    /// next call reads them again (after a driver was bound, say: sysfs changes that rtnetlink
    /// does not announce).
    public func invalidate(linkIndex: Int32? = nil) {
        state.withLock { state in
            if let linkIndex { state.sysfs[linkIndex] = nil } else { state.sysfs = [:] }
            state.facts = [:]
            state.linkRevision = nil
            state.partialRevision = nil
        }
    }

    /// How many times sysfs was read (one read covers every link that needed it).
    package var sysfsReadCount: Int { state.withLock { $0.sysfsReads } }

    /// Another namespace's sysfs tree as kept open, if one is (for tests).
    var keptSysfsDirectory: SysfsDirectory? { state.withLock { $0.sysfsDirectory } }

    /// How many links' sysfs entries were read, over every read.
    package var sysfsLinkReadCount: Int { state.withLock { $0.linksReadFromSysfs } }

    /// How many links' sysfs entries were opened, over every read: fewer than
    /// ``sysfsLinkReadCount`` when links of a software kind were among them.
    package var sysfsEntryReadCount: Int { state.withLock { $0.sysfsEntriesRead } }

    /// Why the last sysfs read gave no evidence, if it failed as a whole (a namespace without
    /// `CAP_SYS_ADMIN`, say); `nil` after a successful read.
    package var lastSysfsError: NetlinkError? { state.withLock { $0.lastSysfsError } }

    /// What one pass over sysfs found for some links.
    private struct SysfsRead {
        let links: [Link]
        let facts: [Int32: SysfsFacts]
        let error: NetlinkError?
    }

    /// `body`'s result for the facts of `links`, in the lock that keeps what was read for them.
    /// Sysfs is read first for the links whose facts are stale. Facts are kept per link index,
    /// with the name, kind, master and type they were read for; a call with an older state of a
    /// link (a query's, taken before a rename) may keep its old name's facts in between, so a
    /// link's facts are used only if they were read for the link as it is now, and read again
    /// otherwise (at most three times; then the link goes without sysfs evidence rather than
    /// with another name's).
    private func withCurrentFacts<T>(of links: some Collection<Link>, _ body: ([LinkFacts], inout State) -> T) -> T {
        var attempt = 0
        while true {
            attempt += 1
            let read = readStaleSysfs(of: links)
            let result = state.withLock { state -> T? in
                Self.keep(read, in: &state)
                var facts: [LinkFacts] = []
                facts.reserveCapacity(links.count)
                for link in links {
                    let key = Self.sysfsKey(link)
                    let kept = state.sysfs[link.index]
                    if let kept, kept.key != key, attempt < 4 { return nil }
                    facts.append(LinkFacts(link: link, sysfs: kept?.key == key ? kept!.facts : .absent))
                }
                return body(facts, &state)
            }
            if let result { return result }
        }
    }

    /// Reads sysfs, in one pass, for those of `links` whose name, kind, master or link type
    /// changed since their facts were last read (or that were never read); `nil` if none did.
    private func readStaleSysfs(of links: some Collection<Link>) -> SysfsRead? {
        let stale = state.withLock { state in
            links.filter { state.sysfs[$0.index]?.key != Self.sysfsKey($0) }
        }
        guard !stale.isEmpty else { return nil }
        let read = readSysfs(of: stale)
        return SysfsRead(links: stale, facts: read.facts, error: read.error)
    }

    /// Keeps what `read` found, in the same lock as the classification that uses it.
    private static func keep(_ read: SysfsRead?, in state: inout State) {
        guard let read else { return }
        for link in read.links { state.sysfs[link.index] = (sysfsKey(link), read.facts[link.index] ?? .absent) }
        state.sysfsReads += 1
        state.linksReadFromSysfs += read.links.count
        state.sysfsEntriesRead += read.facts.count
        state.lastSysfsError = read.error
    }

    private static func sysfsKey(_ link: Link) -> LinkFacts.SysfsKey {
        .init(name: link.name, kind: link.kind, masterIndex: link.masterIndex, arphrdType: link.arphrdType)
    }

    /// The sysfs tree of another namespace, mounted once and kept open while it shows the
    /// namespace that the source's name or path leads to (``SysfsDirectory/shows(_:)``): a
    /// namespace made later under the same name gets a tree of its own. A read through it is a
    /// few file reads; mounting it is a thread, `unshare` and two mounts.
    private func sysfsDirectory(of namespace: NetworkNamespace) throws(NetlinkError) -> SysfsDirectory {
        if let kept = state.withLock({ $0.sysfsDirectory }) {
            if kept.shows(namespace) { return kept }
            // A deleted namespace's tree is released even if no other can be opened.
            state.withLock { if $0.sysfsDirectory === kept { $0.sysfsDirectory = nil } }
        }
        let opened = try namespace.openSysfs()
        state.withLock { $0.sysfsDirectory = opened }
        return opened
    }

    private func readSysfs(of links: [Link]) -> (facts: [Int32: SysfsFacts], error: NetlinkError?) {
        // A tree is read as it is: a fixture may give a veth a radio's entry. The live sysfs of
        // a link of a software kind has nothing that changes its answer
        // (`LinkClassifier.sysfsMayDecide(ofKind:)`): a host's veths are not read.
        var read = links
        if case .live = source { read.removeAll { !LinkClassifier.sysfsMayDecide(ofKind: $0.kind) } }
        // Only a link without an rtnetlink kind can be stacked by sysfs alone (see
        // `SysfsFacts.lowerLinkNames`): the others' directories are not listed.
        let wanted = read.map { (index: $0.index, name: $0.name, listing: $0.kind == nil) }
        switch source {
        case .tree(let root):
            let reader = SysfsReader(root: root)
            return (Dictionary(wanted.map { ($0.index, reader.facts(forLinkNamed: $0.name, listingLowerLinks: $0.listing)) },
                               uniquingKeysWith: { first, _ in first }), nil)
        case .live(let namespace):
            guard !wanted.isEmpty else { return ([:], nil) }
            do {
                let reader = namespace.isCurrent ? SysfsReader() : SysfsReader(directory: try sysfsDirectory(of: namespace))
                let facts = Dictionary(wanted.map { index, name, listing in
                    let facts = reader.facts(forLinkNamed: name, listingLowerLinks: listing)
                    // A rename between the netlink read and this one: not this link's entry.
                    let stale = facts.interfaceIndex.map { $0 != index } ?? false
                    return (index, stale ? SysfsFacts.absent : facts)
                }, uniquingKeysWith: { first, _ in first })
                return (facts, nil)
            } catch {
                return ([:], error)
            }
        }
    }
}
