import Foundation
import NetnsTestSupport
import Testing

/// A namespace's engine ends with its last user: `engine-lifetime` (Tests/Tools/EngineLifetime)
/// listens with a monitor, iterates an answer stream and a path sequence in tasks it cancels,
/// starts a path monitor and cancels it, twice, and counts its threads and descriptors before,
/// during and after. A process of its own, so that no other test's threads or descriptors are
/// counted.
@Suite("Engine lifetime", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct EngineLifetimeTests {
    /// One line of the tool: its threads (libdispatch's workers left out) and descriptors.
    struct Moment {
        var threads: [String]
        var descriptors: Int
        var targets: String
    }

    @Test(.timeLimit(.minutes(1))) func threadsAndDescriptorsReturnToTheirBaselineOnceEveryMonitorIsGone() throws {
        let ns = try TestNamespace("life")
        defer { ns.delete() }
        try ns.batch(["link add va type veth peer name vb", "link set va up", "link set vb up",
                      "address add 10.9.0.1/24 dev va", "route add default via 10.9.0.254"])
        let tool = URL(fileURLWithPath: reachBinary).deletingLastPathComponent().appendingPathComponent("engine-lifetime").path
        let result = try run([tool, ns.name], check: false)
        #expect(result.status == 0, "\(result.output)")
        var moments: [String: Moment] = [:]
        for line in result.output.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 4, let count = Int(fields[2]) else { continue }
            moments[fields[0]] = Moment(threads: fields[1].split(separator: ",").map(String.init), descriptors: count, targets: fields[3])
        }
        let (baseline, during, after) = try (#require(moments["baseline"]), #require(moments["during"]), #require(moments["after"]))
        #expect(during.threads.contains { $0.hasPrefix("netlink") } && during.threads.contains("inotify"),
                "the monitors ran on the namespace's subscription: \(during.threads)")
        #expect(during.descriptors > baseline.descriptors)
        let library = { (name: String) in name.hasPrefix("netlink") || name.hasPrefix("netns") || name == "inotify" }
        #expect(!baseline.threads.contains(where: library), "\(baseline.threads)")
        #expect(after.threads == baseline.threads, "the library's threads are gone: \(after.threads)")
        #expect(after.descriptors == baseline.descriptors, "before: \(baseline.targets); after: \(after.targets)")
    }
}
