internal import CCurl
import LinuxReachability
import Netlink

/// An HTTP connectivity check that the user names, as NetworkManager's `[connectivity]` section
/// configures one: the URL, the answer that means "online", and how long to wait.
///
/// Nothing is contacted unless a probe is made and checked: there is no built-in URL. A probe
/// runs inside the namespace it is asked about, bound to the link the answer uses
/// (`SO_BINDTODEVICE`, which needs `CAP_NET_RAW`; without it, bound to the link's address), with
/// no proxy from the environment and without following redirects: a redirect is a captive
/// portal, whose location the report gives. A host name in the URL is resolved as targets are:
/// in the namespace, from its own hosts file and name servers first.
public struct ConnectivityProbe: Sendable, Hashable {
    /// The answer that means "online".
    public enum Expectation: Sendable, Hashable {
        /// An HTTP 204 (No Content), as Android's `generate_204` check expects.
        case noContent
        /// A 2xx answer whose body starts with this text, as NetworkManager's `response=`
        /// (distributions ship `response=OK` and the like). Only that many bytes are read.
        case bodyPrefix(String)
    }

    /// The URL, as libcurl normalized it.
    public let url: String
    /// The answer that means "online".
    public var expectation: Expectation
    /// How long one probe may take, connection and answer together.
    public var timeout: Duration
    /// How often a monitor probes again while the answer stays the same; nil (the default)
    /// probes only when the answer changes, and the monitor has no timer.
    public var interval: Duration?
    /// The address family to probe over (`CURLOPT_IPRESOLVE`), for a URL whose host has
    /// addresses of both; nil (the default) takes either.
    public var addressFamily: AddressFamily?

    /// The URL's host (without an IPv6 literal's brackets) and port: a name is resolved in
    /// the namespace and its addresses given to libcurl (see `HTTPProbeRequest`).
    let host: String
    let port: Int
    /// The host as an address, when it is a literal.
    let hostAddress: IPAddress?

    /// The name of the environment variable that `reach` reads the probe URL from when no
    /// `--probe-url` is given.
    public static let environmentVariable = "REACH_PROBE_URL"

    /// A probe of `url` (`http` or `https`).
    /// - Throws: ``ConnectivityError/invalidURL(_:reason:)`` for a URL libcurl does not parse
    ///   or of another scheme; ``ConnectivityError/invalidDuration(name:reason:)`` for a
    ///   timeout or interval that is not positive; ``ConnectivityError/invalidExpectation(_:)``
    ///   for an empty expected text; ``ConnectivityError/httpClientUnavailable(_:)``
    ///   when libcurl cannot be loaded.
    public init(url: String, expecting expectation: Expectation = .noContent, timeout: Duration = .seconds(5),
                interval: Duration? = nil) throws(ConnectivityError) {
        guard timeout > .zero else { throw .invalidDuration(name: "probe timeout", reason: "must be more than 0 seconds") }
        if case .bodyPrefix(let text) = expectation, text.isEmpty {
            throw .invalidExpectation("the expected text is empty: every 2xx answer would count as online")
        }
        if let interval, interval <= .zero { throw .invalidDuration(name: "probe interval", reason: "must be more than 0 seconds") }
        let parts = try ProbeURL(parsing: url, curl: try LibCurl.loaded())
        self.url = parts.url
        self.host = parts.host
        self.port = parts.port
        self.hostAddress = IPAddress(parts.host)
        self.expectation = expectation
        self.timeout = timeout
        self.interval = interval
    }

    /// Probes through `interface` (a link's name; nil lets the kernel choose) in `namespace`,
    /// blocking the calling thread for at most about ``timeout`` (and a host name's lookup).
    public func check(through interface: String?, in namespace: NetworkNamespace = .current) -> ConnectivityReport {
        let curl: LibCurl
        do { curl = try LibCurl.loaded() } catch {
            return ConnectivityReport(connectivity: .limited, reason: error.description, interfaceName: interface)
        }
        var pinned: [IPAddress] = []
        if hostAddress == nil {
            do {
                // One trailing dot (a name written absolute) is dropped, as a target's is.
                let name = host.hasSuffix(".") ? String(host.dropLast()) : host
                pinned = try SystemHostResolver(namespace: namespace).resolveScopedBlocking(name).addresses
                    .filter { address in addressFamily.map { address.family == $0 } ?? true }
            } catch {
                return ConnectivityReport(connectivity: .limited, reason: "cannot resolve \(host): \(error)", interfaceName: interface)
            }
            guard !pinned.isEmpty else {
                return ConnectivityReport(connectivity: .limited, reason: "\(host) has no addresses", interfaceName: interface)
            }
        }
        let request = HTTPProbeRequest(probe: self, interface: interface, pinned: pinned)
        do {
            return try namespace.perform { request.run(with: curl) }
        } catch {
            return ConnectivityReport(connectivity: .limited, reason: error.description, interfaceName: interface)
        }
    }

    /// Probes for `answer` in `namespace`: ``ConnectivityReport/noRoute`` when the answer is not
    /// reachable (nothing is sent), else a probe through the answer's link.
    public func check(_ answer: ReachabilityAnswer, in namespace: NetworkNamespace = .current) -> ConnectivityReport {
        guard answer.isReachable else { return .noRoute }
        return check(through: answer.interface?.name, in: namespace)
    }
}

/// A probe URL taken apart by libcurl's URL API.
struct ProbeURL {
    var url: String
    var host: String
    var port: Int

    init(parsing text: String, curl: LibCurl) throws(ConnectivityError) {
        guard let handle = curl.api.pointee.url() else { throw .httpClientUnavailable("curl_url: out of memory") }
        defer { curl.api.pointee.url_cleanup(handle) }
        let code = curl.api.pointee.url_set(handle, CURLUPART_URL, text, 0)
        guard code == CURLUE_OK else { throw .invalidURL(text, reason: curl.api.pointee.url_strerror?(code).map { String(cString: $0) } ?? "does not parse") }
        func part(_ which: CURLUPart, flags: Int32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl.api.pointee.url_get(handle, which, &value, UInt32(flags)) == CURLUE_OK, let value else { return nil }
            defer { curl.api.pointee.free(value) }
            return String(cString: value)
        }
        guard let scheme = part(CURLUPART_SCHEME), scheme == "http" || scheme == "https" else {
            throw .invalidURL(text, reason: "not an http or https URL")
        }
        guard let host = part(CURLUPART_HOST), !host.isEmpty,
              let port = part(CURLUPART_PORT, flags: CURLU_DEFAULT_PORT).flatMap({ Int($0) }),
              let url = part(CURLUPART_URL)
        else { throw .invalidURL(text, reason: "no host") }
        self.url = url
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
    }
}
