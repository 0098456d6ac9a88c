import Dispatch
import LinuxReachability
import Netlink

/// A network path with the connectivity found behind it.
public struct PathConnectivityUpdate: Sendable, Hashable, CustomStringConvertible {
    /// The path the probe was made for.
    public var path: NetworkPath
    /// What the probe found through the path's first interface (``ConnectivityReport/noRoute``
    /// when the path is not satisfied).
    public var report: ConnectivityReport

    /// An update as given.
    public init(path: NetworkPath, report: ConnectivityReport) {
        self.path = path
        self.report = report
    }

    /// The state: `none`, `limited`, `portal` or `full`.
    public var connectivity: Connectivity { report.connectivity }

    /// Such as `satisfied via eth0; connectivity full`.
    public var description: String { "\(path); connectivity \(report)" }
}

extension ConnectivityProbe {
    /// Probes for `path` in `namespace`: ``ConnectivityReport/noRoute`` when the path is not
    /// satisfied (nothing is sent), else a probe through its first interface, the one the
    /// kernel's preferred default route uses. Blocks the calling thread as
    /// ``check(through:in:)`` does.
    public func check(_ path: NetworkPath, in namespace: NetworkNamespace = .current) -> ConnectivityReport {
        guard path.status == .satisfied, let interface = path.availableInterfaces.first else { return .noRoute }
        return check(through: interface.name, in: namespace)
    }
}

extension NetworkPathMonitor {
    /// Every path of this monitor with what `probe` found behind it: the current path first,
    /// then each change, each probed in the monitor's namespace through the path's first
    /// interface (the probe's interval is not used: a path is probed when it changes). The
    /// sequence ends when the path monitor's sequence does, or when the iterating task is
    /// cancelled.
    public func connectivityUpdates(probe: ConnectivityProbe) -> AsyncStream<PathConnectivityUpdate> {
        let (stream, continuation) = AsyncStream<PathConnectivityUpdate>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let namespace = self.namespace
        // Probes block their thread for up to the probe's timeout: a queue of their own, off
        // Swift's cooperative pool.
        let probes = DispatchQueue(label: "NetworkPathMonitor.connectivity")
        let task = Task { [self] in
            for await path in self {
                let report = await withCheckedContinuation { result in
                    probes.async { result.resume(returning: probe.check(path, in: namespace)) }
                }
                continuation.yield(PathConnectivityUpdate(path: path, report: report))
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
