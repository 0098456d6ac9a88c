#if CommandLineTool
import ArgumentParser
import Glibc
import ReachabilityConnectivity

/// The connectivity probe's options, shared by `check`, `watch` and `wait`.
struct ProbeOptions: ParsableArguments {
    @Option(name: .customLong("probe-url"),
            help: ArgumentHelp("The connectivity probe's http or https URL (default: $\(ConnectivityProbe.environmentVariable)); nothing is probed unless one is named.", valueName: "URL"))
    var url: String?

    @Option(name: .customLong("probe-expect"),
            help: ArgumentHelp("Online means a 2xx answer whose body starts with TEXT (default: an HTTP 204).", valueName: "TEXT"))
    var expect: String?

    @Option(name: .customLong("probe-timeout"),
            help: ArgumentHelp("Give one probe this many seconds.", valueName: "SECONDS"))
    var timeout: Double = 5

    /// Refuses probe options without the option that asks for a probe.
    func validate(connectivityAsked: Bool) throws {
        guard !connectivityAsked else { return }
        if url != nil { throw ValidationError("--probe-url needs --connectivity") }
        if expect != nil { throw ValidationError("--probe-expect needs --connectivity") }
    }

    /// The probe asked for, with `interval` between probes of an unchanged answer (nil: only on
    /// changes).
    /// - Throws: A `ValidationError` without a URL; ``ConnectivityError`` for a bad URL or
    ///   duration, or without libcurl.
    func probe(interval: Double? = nil) throws -> ConnectivityProbe {
        let fromEnvironment = getenv(ConnectivityProbe.environmentVariable).map { String(cString: $0) }
        guard let url = url ?? fromEnvironment, !url.isEmpty else {
            throw ValidationError("--connectivity needs --probe-url URL (or $\(ConnectivityProbe.environmentVariable))")
        }
        return try ConnectivityProbe(url: url, expecting: expect.map { .bodyPrefix($0) } ?? .noContent,
                                     timeout: try Self.duration(timeout, name: "--probe-timeout"),
                                     interval: try interval.map { try Self.duration($0, name: "--probe-interval") })
    }

    /// `seconds` as a duration.
    /// - Throws: A `ValidationError` unless it is a positive, finite number.
    static func duration(_ seconds: Double, name: String) throws -> Duration {
        guard seconds > 0, seconds.isFinite, seconds < 1e9 else { throw ValidationError("\(name) must be a number of seconds above 0") }
        return .nanoseconds(Int64((seconds * 1e9).rounded(.up)))
    }
}

/// `--probe-interval`, which `watch` and `wait` take beside ``ProbeOptions``.
struct ProbeIntervalOption: ParsableArguments {
    @Option(name: .customLong("probe-interval"),
            help: ArgumentHelp("Probe again this often while the answer stays (default: only on changes).", valueName: "SECONDS"))
    var seconds: Double?

    /// Refuses an interval without the option that asks for a probe.
    func validate(connectivityAsked: Bool) throws {
        if seconds != nil, !connectivityAsked { throw ValidationError("--probe-interval needs --connectivity") }
    }
}
#endif
