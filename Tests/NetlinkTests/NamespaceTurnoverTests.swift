import Foundation
import Netlink
import NetnsTestSupport
import Testing

/// A service that follows short-lived namespaces: each namespace's subscription (its thread,
/// libnl's cache manager, its sockets and its handle on the namespace) goes when its last
/// observer does, and pins nothing once the namespace is deleted.
@Suite("Namespaces followed in turn", .enabled(if: namespacesAvailable, "needs root and iproute2"), .serialized)
struct NamespaceTurnoverTests {
    /// The descriptors of this process that are sockets in, or handles on, the namespace.
    private func descriptorsHeld(in identity: NamespaceIdentity, path: String) -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else { return -1 }
        let handle = "net:[\(info.st_ino)]"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        let handles = entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == handle }
        return identity.socketsHeld() + handles.count
    }

    @Test(.timeLimit(.minutes(5))) func eachNamespacesSubscriptionGoesWithItsLastObserver() throws {
        for round in 0..<1000 {
            let ns = try TestNamespace("turn")
            defer { ns.delete() }
            let identity = try #require(NamespaceIdentity(path: ns.path))
            func follow() throws {
                let subscription = try NetlinkSubscription.shared(namespace: .named(ns.name))
                let recorder = EventRecorder(subscription)
                try ns.ip("link", "add", "va", "type", "veth", "peer", "name", "vb")
                #expect(recorder.waitFor { if case .new(let link)? = $0.linkChange { link.name == "va" } else { false } },
                        "round \(round)")
                #expect(descriptorsHeld(in: identity, path: ns.path) > 0)
                recorder.cancel()
            }
            try follow()
            // The subscription's deinit waits for its thread, which frees libnl's manager and the
            // sockets as it ends: none held means the thread is gone too. Another test's
            // `NetlinkSubscription.shared` may hold it a moment longer (its look through the
            // registry takes every live subscription until it returns).
            #expect(eventually { descriptorsHeld(in: identity, path: ns.path) == 0 }, "round \(round): the namespace is still held")
        }
    }
}

/// A namespace named by a process (`/proc/PID/ns/net`) ends for the library when the process
/// exits, as a deleted named one does.
@Suite("Namespaces of processes", .enabled(if: namespacesAvailable, "needs root and iproute2"))
struct ProcessNamespaceTests {
    @Test(.timeLimit(.minutes(1))) func theSubscriptionEndsWhenTheProcessExits() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--net", "/bin/sleep", "60"]
        try process.run()
        // SIGKILL: a test runner may leave SIGTERM ignored, and its children with it.
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let path = "/proc/\(process.processIdentifier)/ns/net"
        // `unshare` has made the namespace once its own differs from this process's.
        #expect(eventually { NamespaceIdentity(path: path) != NamespaceIdentity(path: "/proc/self/ns/net") })
        let subscription = try NetlinkSubscription(namespace: .path(path))
        #expect(subscription.state.link(named: "lo") != nil)
        #expect(subscription.termination == nil)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(eventually { subscription.termination?.code == NetlinkError.namespaceDeleted.code },
                "\(String(describing: subscription.termination))")
    }
}
