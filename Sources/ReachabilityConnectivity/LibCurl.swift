internal import CCurl

/// libcurl, opened on first use (see `CCurl.h` for why it is not linked in) and initialized
/// once for the process.
struct LibCurl: @unchecked Sendable {
    // @unchecked Sendable: a table of function pointers, written once before it is shared and
    // kept for the life of the process, as the library is.
    let api: UnsafePointer<ccurl_api>

    /// The library's file name: Debian's libcurl4 (or libcurl3-gnutls's soname, tried second).
    static let libraryNames = ["libcurl.so.4", "libcurl-gnutls.so.4"]

    /// The loaded library, or why it could not be loaded.
    static let shared: Result<LibCurl, ConnectivityError> = load()

    private static func load() -> Result<LibCurl, ConnectivityError> {
        var failures: [String] = []
        for name in libraryNames {
            var api = ccurl_api()
            var failure: UnsafePointer<CChar>?
            guard ccurl_load(name, &api, &failure) == 0 else {
                failures.append(failure.map { String(cString: $0) } ?? name)
                continue
            }
            // Not thread-safe, and needed once: done here, inside the one-time initializer.
            let code = api.global_init(Int(CURL_GLOBAL_DEFAULT))
            guard code == CURLE_OK else {
                failures.append("\(name): curl_global_init failed (CURLcode \(code.rawValue))")
                continue
            }
            let kept = UnsafeMutablePointer<ccurl_api>.allocate(capacity: 1)
            kept.initialize(to: api)
            return .success(LibCurl(api: UnsafePointer(kept)))
        }
        return .failure(.httpClientUnavailable(failures.joined(separator: "; ") + " (install libcurl4)"))
    }

    /// The loaded library.
    /// - Throws: ``ConnectivityError/httpClientUnavailable(_:)`` when it is missing.
    static func loaded() throws(ConnectivityError) -> LibCurl { try shared.get() }

    /// libcurl's text for `code`.
    func text(of code: CURLcode) -> String { api.pointee.easy_strerror(code).map { String(cString: $0) } ?? "CURLcode \(code.rawValue)" }
}
