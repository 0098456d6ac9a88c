import Foundation
import Testing
import Netlink
import NetnsTestSupport
@testable import LinuxReachability

/// The classification cache, on a fixture tree and on a real namespace's own sysfs.
@Suite("Classification cache")
struct ClassificationCacheTests {
    private func link(_ index: Int32, _ name: String, kind: String? = nil, master: Int32? = nil,
                      flags: InterfaceFlags = [.up]) -> Link {
        Link(index: index, name: name, arphrdType: .ether, kind: kind, flags: flags, operState: .up, mtu: 1500,
             masterIndex: master)
    }

    @Test func sysfsIsReadOnlyWhenANameKindOrMasterChanges() throws {
        let tree = try SysfsReaderTests.TemporaryTree()
        try tree.file("class/net/wlan0/uevent", "DEVTYPE=wlan\nIFINDEX=2\n")
        try tree.file("class/net/eth0/uevent", "IFINDEX=2\n")
        let cache = LinkClassificationCache(source: .tree(root: tree.root))

        #expect(cache.classifications(of: [link(2, "wlan0")])[2]?.type == .wifi)
        #expect(cache.sysfsReadCount == 1)
        // Flags change: same sysfs facts, no read.
        #expect(cache.classifications(of: [link(2, "wlan0", flags: [.up, .running])])[2]?.type == .wifi)
        #expect(cache.sysfsReadCount == 1)
        // Rename: read again.
        #expect(cache.classifications(of: [link(2, "eth0")])[2]?.type == .other)
        #expect(cache.sysfsReadCount == 2)
        // A master appears: read again; a bridge appears, which reads only the bridge.
        _ = cache.classifications(of: [link(2, "eth0", master: 3), link(3, "br0", kind: "bridge")])
        #expect(cache.sysfsReadCount == 3)
        // Sysfs changed behind rtnetlink's back: nothing notices until invalidated.
        try tree.file("class/net/eth0/uevent", "DEVTYPE=wwan\nIFINDEX=2\n")
        #expect(cache.classifications(of: [link(2, "eth0", master: 3), link(3, "br0", kind: "bridge")])[2]?.type == .other)
        cache.invalidate(linkIndex: 2)
        let after = cache.classifications(of: [link(2, "eth0", master: 3), link(3, "br0", kind: "bridge")])
        #expect(after[2]?.type == .cellular)
        // The bridge follows its only typed port.
        #expect(after[3]?.type == .cellular)
        #expect(after[3]?.isExpensive == true)
        #expect(cache.sysfsReadCount == 4)
        // A removed link is forgotten.
        #expect(cache.classifications(of: [link(3, "br0", kind: "bridge")]).keys.sorted() == [3])
    }

    /// With a subscription's link revision, a round in which no link changed what it is costs
    /// one comparison; a new revision compares the links, and reads sysfs for a renamed one.
    @Test func aKnownLinkRevisionIsAnsweredWithoutLookingAtTheLinks() throws {
        let tree = try SysfsReaderTests.TemporaryTree()
        try tree.file("class/net/wlan0/uevent", "DEVTYPE=wlan\nIFINDEX=2\n")
        let cache = LinkClassificationCache(source: .tree(root: tree.root))
        func state(_ links: [Link], revision: UInt64?) -> NetworkState {
            var state = NetworkState(links: links, addresses: [], defaultRoutes: [])
            state.linkRevision = revision
            return state
        }
        #expect(cache.classifications(ofLinksIn: state([link(2, "wlan0")], revision: 7))[2]?.type == .wifi)
        #expect(cache.sysfsReadCount == 1)
        // The same revision: the kept answers, whatever the links say (the subscription vouches
        // that they changed at most their state).
        #expect(cache.classifications(ofLinksIn: state([link(2, "wlan0", flags: [])], revision: 7))[2]?.type == .wifi)
        #expect(cache.classifications(ofLinksIn: state([link(2, "eth0")], revision: 7))[2]?.type == .wifi)
        #expect(cache.sysfsReadCount == 1)
        // A new revision: the links are compared, and the renamed one is read again.
        #expect(cache.classifications(ofLinksIn: state([link(2, "eth0")], revision: 8))[2]?.type == .wiredEthernet)
        #expect(cache.sysfsReadCount == 2)
        // A state without a revision (built by hand) is always compared.
        #expect(cache.classifications(ofLinksIn: state([link(2, "wlan0")], revision: nil))[2]?.type == .wifi)
        #expect(cache.sysfsReadCount == 3)
        #expect(cache.classifications(ofLinksIn: state([link(2, "eth0")], revision: nil))[2]?.type == .wiredEthernet)
        // Invalidation forgets the revision: sysfs is read again even for a known one.
        _ = cache.classifications(ofLinksIn: state([link(2, "eth0")], revision: 9))
        let reads = cache.sysfsReadCount
        cache.invalidate()
        #expect(cache.classifications(ofLinksIn: state([link(2, "eth0")], revision: 9))[2]?.type == .wiredEthernet)
        #expect(cache.sysfsReadCount == reads + 1)
    }

    /// A monitor's round asks only for the links its answers go out through: their sysfs and
    /// that of what they stack on is read, once while the links stay what they are, and the
    /// answers are those of a classification of every link. After a change of the links the
    /// kept ones are made again in one pass; an older state does not replace them.
    @Test func aRoundClassifiesOnlyTheLinksItNeeds() throws {
        let tree = try SysfsReaderTests.TemporaryTree()
        try tree.file("class/net/wlan0/uevent", "DEVTYPE=wlan\nIFINDEX=2\n")
        try tree.file("class/net/wlp4/uevent", "DEVTYPE=wlan\nIFINDEX=4\n")
        for index in 10..<20 { try tree.file("class/net/eth\(index)/uevent", "IFINDEX=\(index)\n") }
        let cache = LinkClassificationCache(source: .tree(root: tree.root))
        var links = [link(2, "wlan0"), link(3, "br0", kind: "bridge"), link(4, "wlp4", master: 3)]
        links += (10..<20).map { link(Int32($0), "eth\($0)") }
        func state(_ links: [Link], revision: UInt64?) -> NetworkState {
            var state = NetworkState(links: links, addresses: [], defaultRoutes: [])
            state.linkRevision = revision
            return state
        }
        let everything = LinkClassificationCache(source: .tree(root: tree.root)).classifications(of: links)
        #expect(LinkClassificationCache(source: .tree(root: tree.root)).classificationsOnce(of: links) == everything,
                "a classification made once and not kept gives the same answers")
        // The bridge: it and its port are read, nothing else.
        let bridge = cache.classifications(ofLinksIn: state(links, revision: 1), needed: [3])
        #expect(bridge[3] == everything[3] && bridge[3]?.type == .wifi)
        #expect(cache.sysfsLinkReadCount == 2)
        // Another link: read and kept beside the first.
        let both = cache.classifications(ofLinksIn: state(links, revision: 1), needed: [2, 99])
        #expect(both[2] == everything[2] && both[3] == everything[3])
        #expect(cache.sysfsLinkReadCount == 3)
        // Known links of a known revision: no read.
        #expect(cache.classifications(ofLinksIn: state(links, revision: 1), needed: [3, 2])[2]?.type == .wifi)
        #expect(cache.sysfsLinkReadCount == 3)
        // A new revision: the port left the bridge, which no longer takes its type. The links
        // answered before are answered again in the same pass; only the port, whose master
        // changed, is read again.
        let before = links
        links[2] = link(4, "wlp4")
        let alone = cache.classifications(ofLinksIn: state(links, revision: 2), needed: [3])
        #expect(alone[3]?.type == .other && alone[2]?.type == .wifi)
        #expect(cache.sysfsLinkReadCount == 4)
        // An older state (a query's, read before the round's) is answered on its own and
        // leaves the newer answers be.
        #expect(cache.classifications(ofLinksIn: state(before, revision: 1), needed: [3])[3]?.type == .wifi)
        #expect(cache.classifications(ofLinksIn: state(links, revision: 2), needed: [3])[3]?.type == .other)
        // A state without a revision (built by hand) is classified whole.
        #expect(cache.classifications(ofLinksIn: state(links, revision: nil), needed: [3]).count == links.count)
    }

    /// Sysfs facts are kept per link index. A query with an older state of a renamed link
    /// (taken before the rename) stores its old name's facts; a round with the new state must
    /// never classify the link with them, however the two interleave. (A read-only review made
    /// 216 000 such rounds beside such queries: 2 025 answers took the old name's facts.)
    @Test func aRenamedLinkIsNeverJudgedWithItsOldNamesFacts() throws {
        let tree = try SysfsReaderTests.TemporaryTree()
        try tree.file("class/net/wlan0/uevent", "DEVTYPE=wlan\nIFINDEX=4\n")
        try tree.file("class/net/eth0/uevent", "IFINDEX=4\n")
        let cache = LinkClassificationCache(source: .tree(root: tree.root))
        func state(_ name: String, revision: UInt64) -> NetworkState {
            var state = NetworkState(links: [link(4, name), link(2, "lo0")], addresses: [], defaultRoutes: [])
            state.linkRevision = revision
            return state
        }
        let expected = try #require(cache.classifications(ofLinksIn: state("eth0", revision: 2), needed: [4])[4])
        #expect(expected.type != .wifi)
        let stop = Locked(false)
        let old = state("wlan0", revision: 1)
        let older = Thread {
            while !stop.withLock({ $0 }) { _ = cache.classifications(ofLinksIn: old, needed: [4]) }
        }
        older.start()
        var wrong = 0
        for revision in UInt64(3)..<20_003 {
            let new = state("eth0", revision: revision)
            if cache.classifications(ofLinksIn: new, needed: [4])[4] != expected { wrong += 1 }
            if cache.classifications(ofLinksIn: new, needed: [4])[4] != expected { wrong += 1 }
        }
        stop.withLock { $0 = true }
        #expect(wrong == 0)
    }

    /// A link stacked by sysfs alone (a qmi_wwan QMAP mux link: a `lower_wwan0` entry, no kind,
    /// no parent device, no `IFLA_LINK`) takes the type of the link it rides on, in a one-shot
    /// answer too, which reads that link's sysfs in a second pass; two lower links decide
    /// nothing, and a link with a kind of its own keeps it.
    @Test func aLinkStackedBySysfsAloneTakesItsLowerLinksType() throws {
        let tree = try SysfsReaderTests.TemporaryTree()
        try tree.file("class/net/wwan0/uevent", "DEVTYPE=wwan\nIFINDEX=5\n")
        try tree.file("class/net/qmimux0/uevent", "INTERFACE=qmimux0\nIFINDEX=6\n")
        try tree.symlink("class/net/qmimux0/lower_wwan0", to: "../wwan0")
        try tree.file("class/net/odd0/uevent", "INTERFACE=odd0\nIFINDEX=7\n")
        try tree.symlink("class/net/odd0/lower_wwan0", to: "../wwan0")
        try tree.symlink("class/net/odd0/lower_eth9", to: "../eth9")
        func raw(_ index: Int32, _ name: String, kind: String? = nil) -> Link {
            Link(index: index, name: name, arphrdType: .none, kind: kind, flags: [.up], operState: .unknown, mtu: 1500)
        }
        let links = [raw(5, "wwan0"), raw(6, "qmimux0"), raw(7, "odd0"), link(9, "eth9"), raw(8, "tun0", kind: "tun")]
        let everything = LinkClassificationCache(source: .tree(root: tree.root)).classifications(of: links)
        #expect(everything[6]?.type == .cellular && everything[6]?.isExpensive == true && everything[6]?.evidence == .lowerLink(5))
        #expect(everything[6]?.kind == .other && everything[6]?.isVirtual == true)
        #expect(everything[7]?.type == .other, "two lower links: nothing to inherit")
        #expect(everything[8]?.kind == .tun)
        let cache = LinkClassificationCache(source: .tree(root: tree.root))
        let mux = cache.classifications(of: [6], among: links)
        #expect(mux.keys.sorted() == [5, 6])
        #expect(mux[6] == everything[6])
    }

    /// A one-shot answer classifies the link it goes out through and what that link stacks on,
    /// with the same answers as a classification of every link, and reads nothing else.
    @Test func onlyTheNeededLinksAndWhatTheyStackOnAreRead() throws {
        let tree = try SysfsReaderTests.TemporaryTree()
        try tree.file("class/net/wlan0/uevent", "DEVTYPE=wlan\nIFINDEX=2\n")
        try tree.file("class/net/wwan0/uevent", "DEVTYPE=wwan\nIFINDEX=5\n")
        func links() -> [Link] {
            var links = [link(2, "wlan0"),
                         Link(index: 3, name: "wlan0.5", arphrdType: .ether, kind: "vlan", flags: [.up], operState: .up,
                              mtu: 1500, lowerLinkIndex: 2),
                         link(4, "br0", kind: "bridge"), link(5, "wwan0", master: 4), link(6, "veth0", kind: "veth", master: 4)]
            links += (10..<40).map { link($0, "eth\($0)") }
            return links
        }
        let everything = LinkClassificationCache(source: .tree(root: tree.root)).classifications(of: links())

        let cache = LinkClassificationCache(source: .tree(root: tree.root))
        let vlan = cache.classifications(of: [3], among: links())
        #expect(vlan.keys.sorted() == [2, 3])
        #expect(vlan[3]?.type == .wifi && vlan[3] == everything[3])
        #expect(cache.sysfsLinkReadCount == 2)
        let bridge = cache.classifications(of: [4], among: links())
        #expect(bridge.keys.sorted() == [4, 5, 6])
        #expect(bridge[4]?.type == .cellular && bridge[4] == everything[4])
        #expect(cache.sysfsLinkReadCount == 5)
        // Asked again: what was read is kept.
        _ = cache.classifications(of: [3, 4], among: links())
        #expect(cache.sysfsLinkReadCount == 5)
        // Every link alone gets the answer the whole classification gives it.
        for index in everything.keys {
            #expect(cache.classifications(of: [index], among: links())[index] == everything[index])
        }
        #expect(cache.sysfsLinkReadCount == links().count)
        // An index that is not a link: nothing.
        #expect(cache.classifications(of: [99], among: links()).isEmpty)
    }

    @Test func thePolicyIsApplied() throws {
        let cache = LinkClassificationCache(source: .tree(root: "/nonexistent"),
                                            policy: try ConstrainedLinkPolicy(parsing: "eth*"))
        let answers = cache.classifications(of: [link(2, "eth0"), link(3, "veth0", kind: "veth")])
        #expect(answers[2]?.isConstrained == true)
        #expect(answers[3]?.isConstrained == false)
    }

    /// A name rule matches an alternative name too (udev's longer predictable names are often
    /// only that), and a kept classification follows a change of them.
    @Test func aNameRuleMatchesAlternativeNamesAndFollowsTheirChanges() throws {
        let cache = LinkClassificationCache(source: .tree(root: "/nonexistent"),
                                            policy: try ConstrainedLinkPolicy(parsing: "enx02*"))
        var usb = link(2, "eth1")
        #expect(cache.classifications(of: [usb])[2]?.isConstrained == false)
        usb.alternativeNames = ["enp0s20f0u1", "enx020000000001"]
        #expect(cache.classifications(of: [usb])[2]?.isConstrained == true)
        usb.alternativeNames = ["enp0s20f0u1"]
        #expect(cache.classifications(of: [usb])[2]?.isConstrained == false)
    }

    /// `/sys` shows the root namespace's links; the live source mounts the namespace's own.
    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func liveSourceReadsTheNamespacesOwnSysfs() throws {
        let namespace = try TestNamespace("sysfs")
        defer { namespace.delete() }
        try namespace.ip("link", "add", "rtsysA\(getpid() % 1000)", "type", "veth", "peer", "name", "rtsysB")
        let name = "rtsysA\(getpid() % 1000)"
        let connection = try NetlinkConnection(namespace: try .named(namespace.name))
        let links = try connection.links()
        let cache = LinkClassificationCache(source: .live(try .named(namespace.name)))
        let answers = cache.classifications(of: links)
        #expect(cache.lastSysfsError == nil)
        let veth = try #require(links.first { $0.name == name })
        #expect(answers[veth.index]?.kind == .veth)
        #expect(answers[veth.index]?.isVirtual == true)
        // The root namespace's /sys has no such link; the namespace's own sysfs has.
        #expect(!SysfsReader().facts(forLinkNamed: name).isPresent)
        let facts = try (try NetworkNamespace.named(namespace.name)).withSysfs { root in
            SysfsReader(root: root).facts(forLinkNamed: name)
        }
        #expect(facts.isPresent)
        #expect(facts.interfaceIndex == veth.index)
        #expect(!facts.hasDevice)
        // The host's mounts are untouched: /sys still shows the root namespace.
        #expect(!FileManager.default.fileExists(atPath: "/sys/class/net/\(name)"))
    }

    /// Another namespace's sysfs is mounted once and kept open: read from this thread, it
    /// shows links made and renamed after it was opened, mounts nothing where the process
    /// lives, and lists nothing once its namespace is gone. A cache whose namespace's name
    /// comes to lead to another namespace opens that one's tree.
    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func anOpenSysfsFollowsItsNamespace() throws {
        let first = try TestNamespace("sysdir1"), second = try TestNamespace("sysdir2")
        defer { first.delete(); second.delete() }
        try first.ip("link", "add", "fa", "type", "veth", "peer", "name", "fb")
        try second.ip("link", "add", "sa", "type", "veth", "peer", "name", "sb")
        // A name for the namespace that can be made to lead elsewhere, as `ip netns add` of a
        // deleted name would.
        let name = NSTemporaryDirectory() + "rt-sysfs-\(getpid())"
        unlink(name)
        #expect(symlink(first.path, name) == 0)
        defer { unlink(name) }
        let namespace = try NetworkNamespace.path(name)
        let mounts = try sysfsMounts()
        let directory = try namespace.openSysfs()
        #expect(try sysfsMounts() == mounts, "nothing mounted here")
        let reader = SysfsReader(directory: directory)
        let index = try first.index(of: "fa")
        #expect(reader.facts(forLinkNamed: "fa").interfaceIndex == index)
        #expect(!reader.facts(forLinkNamed: "sa").isPresent)
        try first.batch(["link add fc type veth peer name fd", "link set fa name fz"])
        #expect(reader.facts(forLinkNamed: "fc").isPresent, "a link made after the tree was opened")
        #expect(reader.facts(forLinkNamed: "fz").interfaceIndex == index, "a renamed link")
        #expect(!reader.facts(forLinkNamed: "fa").isPresent)
        #expect(directory.shows(namespace))

        let cache = LinkClassificationCache(source: .live(namespace))
        let firstLinks = try NetlinkConnection(namespace: .named(first.name)).links()
        _ = cache.classifications(of: firstLinks.filter { $0.name != "fc" })
        let kept = try #require(cache.keptSysfsDirectory)
        _ = cache.classifications(of: firstLinks)
        // Two passes (the second for the new link), one tree.
        #expect(cache.sysfsReadCount == 2 && cache.lastSysfsError == nil)
        #expect(cache.keptSysfsDirectory === kept)
        // The name leads to the second namespace now.
        unlink(name)
        #expect(symlink(second.path, name) == 0)
        #expect(!directory.shows(namespace) && !kept.shows(namespace))
        // Its loopback link looks as the first one's did, and veths are not read: forgotten, so
        // that the cache reads sysfs again.
        cache.invalidate()
        _ = cache.classifications(of: try NetlinkConnection(namespace: .named(second.name)).links())
        let reopened = try #require(cache.keptSysfsDirectory)
        #expect(reopened !== kept && reopened.shows(namespace))
        #expect(SysfsReader(directory: reopened).facts(forLinkNamed: "sa").isPresent)
        // Its namespace gone, the first tree lists none of its links.
        first.delete()
        #expect(eventually { !reader.facts(forLinkNamed: "fc").isPresent && !reader.facts(forLinkNamed: "fz").isPresent })
    }

    /// In a live namespace, links of a software kind (veths, a bridge) are answered from
    /// rtnetlink alone, as a read of their sysfs entries would answer them; only the loopback
    /// link, which has no kind, is read. A fixture tree is read whole.
    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func softwareLinksAreAnsweredWithoutTheirSysfsEntries() throws {
        let ns = try TestNamespace("sysskip")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link add br0 type bridge", "link set vb master br0",
                      "link set va up", "link set vb up", "link set br0 up"])
        let links = try NetlinkConnection(namespace: .named(ns.name)).links()
        let cache = LinkClassificationCache(source: .live(try .named(ns.name)))
        let answers = cache.classifications(of: links)
        #expect(cache.sysfsLinkReadCount == links.count && cache.sysfsEntryReadCount == 1)
        // What every entry, read, would have said: the same answers.
        let facts = try NetworkNamespace.named(ns.name).withSysfs { root in
            let reader = SysfsReader(root: root)
            return links.map { LinkFacts(link: $0, sysfs: reader.facts(forLinkNamed: $0.name)) }
        }
        #expect(LinkClassifier.classify(facts) == answers)
        #expect(LinkClassificationCache(source: .live(try .named(ns.name))).classificationsOnce(of: links) == answers)
        for name in ["va", "vb", "br0"] {
            let index = try ns.index(of: name)
            #expect(answers[index]?.type == .other && answers[index]?.isVirtual == true, "\(name)")
        }
    }

    /// A namespace deleted and made again under its name often gets the same identity (the
    /// kernel reuses the inode number): the kept tree, which lists nothing any more, is not
    /// taken for the new namespace's.
    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func aNamespaceMadeAgainUnderItsNameGetsATreeOfItsOwn() throws {
        let name = "rt\(getpid())-sysagain"
        _ = try? run(["ip", "netns", "del", name], check: false)
        try run(["ip", "netns", "add", name])
        defer { _ = try? run(["ip", "netns", "del", name], check: false) }
        let namespace = try NetworkNamespace.named(name)
        let cache = LinkClassificationCache(source: .live(namespace))
        _ = cache.classifications(of: try NetlinkConnection(namespace: namespace).links())
        var old = try #require(cache.keptSysfsDirectory)
        #expect(old.shows(namespace))
        var sameIdentity = 0
        for round in 0..<3 {
            try run(["ip", "netns", "del", name])
            // Once the kernel has cleaned the namespace up (its tree lists no loopback link),
            // its inode number is free, and the next namespace often gets it.
            let gone = old
            #expect(eventually { !SysfsReader(directory: gone).facts(forLinkNamed: "lo").isPresent })
            usleep(1_000_000)
            try run(["ip", "netns", "add", name])
            // The cache reads sysfs only for links it does not know, and not for veths: what it
            // knows is forgotten, so that it reads the loopback link's entry again.
            try run(["ip", "-n", name, "link", "add", "n\(round)a", "type", "veth", "peer", "name", "n\(round)b"])
            cache.invalidate()
            let identity = try namespace.identity()
            if identity == old.identity { sameIdentity += 1 }
            #expect(!old.shows(namespace))
            let links = try NetlinkConnection(namespace: namespace).links()
            _ = cache.classifications(of: links)
            let current = try #require(cache.keptSysfsDirectory)
            #expect(current !== old && current.shows(namespace))
            #expect(SysfsReader(directory: current).facts(forLinkNamed: "n\(round)a").interfaceIndex
                    == links.first { $0.name == "n\(round)a" }?.index)
            old = current
        }
        // Not every kernel reuses the number at once; say whether this one did.
        print("a namespace made again had the old identity \(sameIdentity) times of 3")
    }

    @Test(.enabled(if: namespacesAvailable, "needs root and iproute2"))
    func aMissingNamespaceGivesATypedError() {
        #expect(throws: NetlinkError.namespaceNotFound) {
            try NetworkNamespace.named("rt-no-such-namespace").withSysfs { _ in 0 }
        }
        #expect(throws: NetlinkError.namespaceNotFound) {
            try NetworkNamespace.named("rt-no-such-namespace").openSysfs()
        }
    }

    /// The sysfs mounts where the process lives (`/proc/self/mountinfo`). Other tests add and
    /// remove namespaces meanwhile, whose `nsfs` mounts under `/run/netns` appear here too.
    private func sysfsMounts() throws -> [Substring] {
        try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
            .split(separator: "\n").filter { $0.contains(" - sysfs ") }
    }
}
