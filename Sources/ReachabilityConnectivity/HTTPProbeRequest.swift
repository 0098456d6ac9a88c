internal import CCurl
import LinuxReachability

/// One HTTP request of a connectivity probe, made with libcurl on the calling thread (inside
/// the namespace), and what its answer means.
package struct HTTPProbeRequest: Sendable {
    var probe: ConnectivityProbe
    /// The link to bind to.
    var interface: String?
    /// The addresses of a host name, resolved in the namespace beforehand.
    var pinned: [IPAddress]

    /// The name under which libcurl's cache holds the resolved addresses: in `.invalid`, which
    /// no resolver answers (RFC 6761).
    static let pinnedName = "pinned.reach.invalid"

    /// The most bytes of a body ever read: an expected prefix longer than this is cut to it.
    static let bodyLimit = 64 * 1024

    /// Makes the request and judges its answer.
    func run(with curl: LibCurl) -> ConnectivityReport {
        func report(_ connectivity: Connectivity, _ reason: String?, location: String? = nil, status: Int? = nil) -> ConnectivityReport {
            ConnectivityReport(connectivity: connectivity, portalLocation: location, reason: reason,
                               interfaceName: interface, httpStatus: status)
        }
        let api = curl.api
        // The error buffer and the list of pinned addresses must outlive the handle
        // (`curl_easy_cleanup` may still write an error): made first, freed last.
        let errorText = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        errorText.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        defer { errorText.deallocate() }
        // A resolved name is connected to through a name of libcurl's cache alone: every
        // connection goes to it (`CURLOPT_CONNECT_TO` with no host to match), and the cache
        // holds its addresses (`CURLOPT_RESOLVE`). The URL's own name, which libcurl may write
        // otherwise (punycode, case, a trailing dot), is then never looked up by libcurl with
        // the machine's resolver; it still goes in the request and in TLS's server name.
        var resolve: UnsafeMutablePointer<curl_slist>?
        var connectTo: UnsafeMutablePointer<curl_slist>?
        defer {
            if let resolve { api.pointee.slist_free_all(resolve) }
            if let connectTo { api.pointee.slist_free_all(connectTo) }
        }
        if !pinned.isEmpty {
            let addresses = pinned.map { $0.family == .ipv6 ? "[\($0)]" : "\($0)" }.joined(separator: ",")
            resolve = api.pointee.slist_append(nil, "\(Self.pinnedName):\(probe.port):\(addresses)")
            connectTo = api.pointee.slist_append(nil, "::\(Self.pinnedName):\(probe.port)")
        }
        guard let handle = api.pointee.easy_init() else { return report(.limited, "curl_easy_init failed") }
        defer { api.pointee.easy_cleanup(handle) }
        func set(_ option: CURLoption, _ value: Int) { _ = ccurl_setopt_long(api, handle, option, value) }
        // libcurl copies string options (CURLOPT_URL and the like) when they are set.
        func set(_ option: CURLoption, _ value: String) { _ = value.withCString { ccurl_setopt_pointer(api, handle, option, $0) } }
        set(CURLOPT_URL, probe.url)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_FOLLOWLOCATION, 0)
        set(CURLOPT_TIMEOUT_MS, Int(max(1, min(probe.timeout / .milliseconds(1), Double(Int32.max)))))
        switch probe.addressFamily {
        case .ipv4: set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V4))
        case .ipv6: set(CURLOPT_IPRESOLVE, Int(CURL_IPRESOLVE_V6))
        case nil: break
        }
        set(CURLOPT_PROTOCOLS_STR, "http,https")
        // Environment proxies (`http_proxy`) would send the probe elsewhere.
        set(CURLOPT_NOPROXY, "*")
        set(CURLOPT_USERAGENT, "reach-connectivity-probe")
        if let interface { set(CURLOPT_INTERFACE, "if!" + interface) }
        if let resolve, let connectTo {
            _ = ccurl_setopt_pointer(api, handle, CURLOPT_RESOLVE, resolve)
            _ = ccurl_setopt_pointer(api, handle, CURLOPT_CONNECT_TO, connectTo)
        }
        _ = ccurl_setopt_pointer(api, handle, CURLOPT_ERRORBUFFER, errorText)
        _ = ccurl_setopt_write_callback(api, handle, BodyPrefix.write)
        var sink = BodyPrefix(limit: bodyLimitForExpectation)
        let code = withUnsafeMutablePointer(to: &sink) { sink in
            _ = ccurl_setopt_pointer(api, handle, CURLOPT_WRITEDATA, sink)
            return api.pointee.easy_perform(handle)
        }
        var status = 0
        var location: UnsafeMutablePointer<CChar>?
        _ = ccurl_getinfo_long(api, handle, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_getinfo_string(api, handle, CURLINFO_REDIRECT_URL, &location)
        let (connectivity, reason, portal) = Self.judge(status: status, body: sink.bytes, expectation: probe.expectation,
                                                        location: location.map { String(cString: $0) })
        guard code == CURLE_OK || code == CURLE_WRITE_ERROR && sink.isFull else {
            let detail = errorText.pointee != 0 ? String(cString: errorText) : curl.text(of: code)
            // An answer cut short still tells of a portal; it never tells "online".
            if status > 0, connectivity == .portal {
                return report(.portal, "\(reason ?? "HTTP \(status)"), then \(detail)", location: portal, status: status)
            }
            if code == CURLE_OPERATION_TIMEDOUT {
                return report(.limited, "no answer within \(probe.timeout.secondsDescription): \(detail)", status: status > 0 ? status : nil)
            }
            return report(.limited, detail, status: status > 0 ? status : nil)
        }
        return report(connectivity, reason, location: portal, status: status)
    }

    /// How many bytes of the body the expectation needs.
    private var bodyLimitForExpectation: Int {
        switch probe.expectation {
        case .noContent: 0
        case .bodyPrefix(let text): min(text.utf8.count, Self.bodyLimit)
        }
    }

    /// What an HTTP answer means: its state, the reason when it is not `full`, and a portal's
    /// location.
    package static func judge(status: Int, body: [UInt8], expectation: ConnectivityProbe.Expectation, location: String?)
        -> (Connectivity, reason: String?, location: String?) {
        if (300..<400).contains(status) {
            return (.portal, "HTTP \(status) redirect", location)
        }
        switch expectation {
        case .noContent:
            return status == 204 ? (.full, nil, nil) : (.portal, "HTTP \(status) instead of 204", nil)
        case .bodyPrefix(let text):
            guard (200..<300).contains(status) else { return (.portal, "HTTP \(status)", nil) }
            let expected = Array(text.utf8.prefix(bodyLimit))
            return body.starts(with: expected) ? (.full, nil, nil) : (.portal, "the body does not start with the expected text", nil)
        }
    }
}

/// The start of a body, up to a limit: reading stops once it is reached, so a huge or endless
/// body costs no more than the limit.
struct BodyPrefix {
    var bytes: [UInt8] = []
    let limit: Int
    /// Whether the limit was reached, which stopped the transfer on purpose.
    var isFull = false

    init(limit: Int) { self.limit = limit }

    /// libcurl's `CURLOPT_WRITEFUNCTION`: keeps what fits; returning less than it was given
    /// stops the transfer (`CURLE_WRITE_ERROR`) once the limit is reached.
    static let write: ccurl_write_callback = { data, size, count, context in
        let total = size * count
        guard total > 0, let data, let context else { return total }
        let sink = context.assumingMemoryBound(to: BodyPrefix.self)
        let wanted = min(total, sink.pointee.limit - sink.pointee.bytes.count)
        if wanted > 0 {
            sink.pointee.bytes.append(contentsOf: UnsafeRawBufferPointer(start: data, count: wanted))
        }
        guard sink.pointee.bytes.count >= sink.pointee.limit else { return total }
        sink.pointee.isFull = true
        return 0
    }
}
