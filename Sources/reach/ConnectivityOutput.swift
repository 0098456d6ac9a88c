#if CommandLineTool
import ArgumentParser
import LinuxReachability
import ReachabilityConnectivity

extension ReachabilityAnswer {
    /// The contract's `check` object with the connectivity fields after the others.
    func json(target: String?, addresses: [IPAddress], connectivity report: ConnectivityReport) -> JSON {
        guard case .object(let fields) = json(target: target, addresses: addresses) else { return .null }
        return .object(fields + report.jsonFields)
    }
}

extension Connectivity: ExpressibleByArgument {
    /// The levels `reach wait --connectivity` takes: `none` is always reached.
    public static var allValueStrings: [String] { [limited, portal, full].map(\.rawValue) }
}

extension ConnectivityReport {
    /// `"connectivity"`, then `"portalLocation"` and `"connectivityReason"` when known.
    var jsonFields: [(String, JSON)] {
        var fields: [(String, JSON)] = [("connectivity", .string(connectivity.rawValue))]
        if let portalLocation { fields.append(("portalLocation", .string(portalLocation))) }
        if let reason { fields.append(("connectivityReason", .string(reason))) }
        return fields
    }

    /// Such as `connectivity portal (HTTP 302 redirect, location http://192.0.2.1/login)`.
    var humanText: String { "connectivity \(self)" }
}
#endif
