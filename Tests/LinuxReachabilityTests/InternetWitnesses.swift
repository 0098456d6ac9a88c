import Foundation
import Netlink
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// Everything that answers for the internet and for one far address of a test namespace: the
/// kernel's own lookup, a probe, two monitors, `reach watch` and `reach check`. `expectVia`
/// expects all of them to name one link.
final class InternetWitnesses {
    let ns: TestNamespace
    let far: IPAddress
    let probe: ReachabilityProbe
    let internet: ReachabilityMonitor
    let address: ReachabilityMonitor
    let toInternet: Deliveries
    let toAddress: Deliveries
    let watch: ReachProcess

    init(_ ns: TestNamespace, far: String) throws {
        self.ns = ns
        self.far = IPAddress(far)!
        let namespace = try NetworkNamespace.named(ns.name)
        probe = try ReachabilityProbe(namespace: namespace)
        internet = try ReachabilityMonitor(target: .internet, namespace: namespace)
        address = try ReachabilityMonitor(address: self.far, namespace: namespace)
        toInternet = Deliveries.listening(to: internet)
        toAddress = Deliveries.listening(to: address)
        watch = try ReachProcess(["watch", "--json", "--netns", ns.name])
    }

    deinit {
        internet.stopListening()
        address.stopListening()
        watch.stop()
    }

    /// The link that `reach watch`'s last line names.
    private var watchedLink: String? {
        let objects = watch.lines.withLock { $0 }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return (objects.last?["interface"] as? [String: Any])?["name"] as? String
    }

    /// Expects the kernel's lookup of the far address, and every answer for it and for the
    /// internet, to go through `link`, reachable.
    func expectVia(_ link: String, after step: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let kernel = try ns.ip("route", "get", far.description)
        #expect(kernel.contains("dev \(link) "), "after \(step), the kernel: \(kernel)", sourceLocation: sourceLocation)
        for target in [ReachabilityTarget.internet, .address(far)] {
            let answer = try await probe.answer(for: target).answer
            #expect(answer.isReachable && answer.interface?.name == link, "after \(step), the probe: \(target): \(answer)",
                    sourceLocation: sourceLocation)
        }
        #expect(eventually { toInternet.last?.interface?.name == link && toInternet.last?.isReachable == true
                             && toAddress.last?.interface?.name == link && toAddress.last?.isReachable == true },
                "after \(step), the monitors: \(String(describing: toInternet.last)), \(String(describing: toAddress.last))",
                sourceLocation: sourceLocation)
        #expect(eventually { watchedLink == link }, "after \(step), reach watch: \(watch.lines.withLock { $0 })",
                sourceLocation: sourceLocation)
        for arguments in [[], [far.description]] {
            let check = try run([reachBinary, "check", "--netns", ns.name] + arguments, check: false)
            #expect(check.status == 0 && check.output.contains("dev \(link)"), "after \(step), reach check \(arguments): \(check.output)",
                    sourceLocation: sourceLocation)
        }
    }
}
