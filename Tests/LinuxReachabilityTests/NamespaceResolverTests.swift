import Foundation
import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// A named namespace's own `/etc/netns/NAME/resolv.conf` is what `ip netns exec` mounts over
/// `/etc/resolv.conf`: ``SystemHostResolver`` asks its name servers, with its search domains,
/// through the namespace's links. The name server is a ``TestNameServer`` on the namespace's
/// loopback (127.0.0.153, which no machine's own resolv.conf names); nothing leaves it.
@Suite(.enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct NamespaceResolverTests {
    private static let records: [String: [IPAddress]] = [
        "svc.example.test": [IPAddress("10.0.0.77")!, IPAddress("2001:db8::77")!],
        "other.example.test": [IPAddress("10.0.0.78")!],
    ]

    /// A namespace with a resolver file of its own naming `server`, and `body` run with it.
    private func withResolverFile(_ label: String, _ text: String,
                                  _ body: (TestNamespace, NetworkNamespace, TestNameServer) async throws -> Void) async throws {
        try await withTestNamespace(label) { ns in
            let directory = "/etc/netns/\(ns.name)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try text.write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
            let namespace = try NetworkNamespace.named(ns.name)
            let server = try TestNameServer(namespace: namespace, address: "127.0.0.153", records: Self.records)
            defer { server.stop() }
            try await body(ns, namespace, server)
        }
    }

    @Test func theNamespacesNameServersAnswer() async throws {
        try await withResolverFile("dns1", "nameserver 127.0.0.153\noptions timeout:1 attempts:2\n") { _, namespace, server in
            let resolver = SystemHostResolver(namespace: namespace)
            #expect(Set(try await resolver.resolve("svc.example.test")) == Set(Self.records["svc.example.test"]!))
            #expect(try await resolver.resolve("other.example.test") == [IPAddress("10.0.0.78")!])
            let missing = try await resolver.resolve("missing.example.test")
            #expect(missing.isEmpty, "NXDOMAIN is no address, not an error")
            #expect(server.questions.contains("svc.example.test"), "the namespace's own server was asked: \(server.questions)")
        }
    }

    @Test func itsSearchDomainsAndHostsFileCount() async throws {
        try await withResolverFile("dns2", "search example.test\nnameserver 127.0.0.153\noptions timeout:1\n") { ns, namespace, server in
            let resolver = SystemHostResolver(namespace: namespace)
            #expect(Set(try await resolver.resolve("svc")) == Set(Self.records["svc.example.test"]!), "the file's search domain")
            #expect(server.questions.contains("svc.example.test"))
            // A hosts file of the namespace's own answers first, as it replaces /etc/hosts.
            try "10.9.9.9 svc.example.test\n".write(toFile: "/etc/netns/\(ns.name)/hosts", atomically: true, encoding: .utf8)
            #expect(try await resolver.resolve("svc.example.test") == [IPAddress("10.9.9.9")!])
            #expect(try await resolver.resolve("other") == [IPAddress("10.0.0.78")!], "names it lacks go to the name servers")
        }
    }

    @Test func aNameServerThatDoesNotAnswerIsAnError() async throws {
        // Nothing listens on 127.0.0.154: the query is refused, after the file's one attempt.
        try await withResolverFile("dns3", "nameserver 127.0.0.154\noptions timeout:1 attempts:1\n") { _, namespace, _ in
            await #expect(throws: ReachabilityError.self) {
                try await SystemHostResolver(namespace: namespace).resolve("svc.example.test")
            }
        }
    }

    @Test func aProbeOfTheNamespaceResolvesThroughItsFile() async throws {
        try await withResolverFile("dns4", "nameserver 127.0.0.153\n") { ns, namespace, _ in
            try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                          "address add 10.0.0.1/24 dev va"])
            // Running once the kernel's link watch has told the carrier (up to a second later).
            #expect(eventually { (try? ns.ipJSON("link", "show", "va").first?["operstate"] as? String) == "UP" })
            let probe = try ReachabilityProbe(namespace: namespace)
            let (answer, addresses) = try await probe.answer(for: .host("svc.example.test"))
            #expect(Set(addresses) == Set(Self.records["svc.example.test"]!))
            #expect(answer.flags.contains(.reachable) && answer.flags.contains(.isDirect),
                    "10.0.0.77 is on va's subnet: \(answer)")
        }
    }
}
