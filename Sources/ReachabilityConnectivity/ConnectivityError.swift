import Netlink

/// Why a connectivity probe could not be set up: its URL or options, or the HTTP client.
public enum ConnectivityError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The probe URL does not parse, or is not an `http` or `https` URL.
    case invalidURL(String, reason: String)
    /// A timeout or interval that is not a positive, finite number of seconds.
    case invalidDuration(name: String, reason: String)
    /// An expectation that every answer would meet (an empty expected text).
    case invalidExpectation(String)
    /// libcurl could not be loaded or initialized (the text says why).
    case httpClientUnavailable(String)

    /// One line, such as `invalid probe URL htp://x: Unsupported URL scheme`.
    public var description: String {
        switch self {
        case .invalidURL(let url, let reason): "invalid probe URL \(displayed(url)): \(reason)"
        case .invalidDuration(let name, let reason): "invalid \(name): \(reason)"
        case .invalidExpectation(let reason): "invalid probe expectation: \(reason)"
        case .httpClientUnavailable(let reason): "cannot load libcurl: \(reason)"
        }
    }
}
