import Dispatch
import Netlink

/// Name resolution with a deadline.
///
/// A resolver can hang: a name server that never answers (getaddrinfo then waits its own
/// timeouts, several seconds per server and attempt), or a resolver of the application's that
/// never returns. The library does not wait past ``defaultTimeout`` (or the timeout it was
/// given): the answer then says the name could not be resolved and why
/// (``UnreachableReason/resolutionFailed(_:)``), and a later network change tries again. The
/// resolver's own work is not cancelled (getaddrinfo cannot be); its late result is dropped.
@usableFromInline package enum BoundedResolution {
    /// How long a resolution may take before it is reported as failed: 15 seconds, more than
    /// glibc's default of two attempts of 5 seconds against one name server. A timeout of a
    /// century or more is no deadline at all; a negative one is zero.
    @usableFromInline package static let defaultTimeout: Duration = .seconds(15)

    /// The deadlines' timers run here: a serial queue of the library's own (a global queue
    /// would start libdispatch's worker-pool monitor, a timer for the life of the process).
    private static let deadlines = DispatchQueue(label: "ReachabilityMonitor.resolutionDeadlines")

    /// `addresses` with each IPv4-mapped IPv6 address replaced by the IPv4 address a socket
    /// sends to (a hosts file may list one), a scope kept only on an IPv6 link-local address
    /// (the kernel routes any other without it), duplicates dropped, order kept.
    static func judged(_ addresses: [ResolvedAddress]) -> [ResolvedAddress] {
        guard addresses.contains(where: { $0.address.unmapped != $0.address || $0.interface != nil && !$0.address.needsScope })
        else { return addresses }
        var result: [ResolvedAddress] = []
        for resolved in addresses {
            let address = resolved.address.unmapped
            let judged = ResolvedAddress(address, interface: address.needsScope ? resolved.interface : nil)
            if !result.contains(judged) { result.append(judged) }
        }
        return result
    }

    /// The addresses of `host` from `resolver` (IPv4-mapped ones unmapped, link-local ones
    /// with their links), or the typed reason why there are none: the resolver's error, or
    /// ``ReachabilityError/resolutionFailed(host:message:)`` saying that no answer came within
    /// `timeout`.
    static func resolve(_ host: String, with resolver: any HostResolver,
                        timeout: Duration) async -> Result<[ResolvedAddress], ReachabilityError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<[ResolvedAddress], ReachabilityError>, Never>) in
            let outcome = FirstOutcome(continuation)
            let timer = DeadlineTimer(queue: deadlines, after: timeout) {
                outcome.finish(.failure(.resolutionFailed(host: host, message: "no answer within \(timeout.secondsDescription)")))
            }
            Task(executorPreference: ResolutionExecutor.shared) {
                let result: Result<[ResolvedAddress], ReachabilityError>
                do {
                    result = .success(Self.judged(try await resolver.resolveScoped(host)))
                } catch let error as ReachabilityError {
                    result = .failure(error)
                } catch {
                    result = .failure(.resolutionFailed(host: host, message: "\(error)"))
                }
                timer.cancel()
                outcome.finish(result)
            }
        }
    }
}

/// Resumes a continuation with the first of several outcomes; the others are dropped.
private final class FirstOutcome: Sendable {
    private let continuation = Locked<CheckedContinuation<Result<[ResolvedAddress], ReachabilityError>, Never>?>(nil)

    init(_ continuation: CheckedContinuation<Result<[ResolvedAddress], ReachabilityError>, Never>) {
        self.continuation.withLock { $0 = continuation }
    }

    func finish(_ result: Result<[ResolvedAddress], ReachabilityError>) {
        let waiting = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: result)
    }
}

/// A one-shot timer that can be cancelled before it fires; a cancelled timer never wakes the
/// process.
private final class DeadlineTimer: Sendable {
    /// Delays from this long on (about 95 years) are no deadline: no timer is made. Their
    /// nanoseconds would overflow `Int` from about 292 years on.
    static let longestDelay: Int64 = 3_000_000_000

    // A dispatch source is safe to use from any thread; it is only resumed here and cancelled.
    private nonisolated(unsafe) let source: (any DispatchSourceTimer)?

    init(queue: DispatchQueue, after delay: Duration, _ handler: @escaping @Sendable () -> Void) {
        let (seconds, attoseconds) = delay.components
        guard seconds < Self.longestDelay else {
            source = nil
            return
        }
        let source = DispatchSource.makeTimerSource(queue: queue)
        // A negative delay is none.
        let nanoseconds = max(0, Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
        source.schedule(deadline: .now() + .nanoseconds(nanoseconds))
        source.setEventHandler { [source] in
            source.cancel()
            handler()
        }
        source.resume()
        self.source = source
    }

    func cancel() { source?.cancel() }
}

extension Result {
    /// The error of a failure, nil for a success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension Duration {
    /// Such as `15 s` or `0.25 s`.
    package var secondsDescription: String {
        let (seconds, attoseconds) = components
        let milliseconds = attoseconds / 1_000_000_000_000_000
        return milliseconds == 0 ? "\(seconds) s" : "\(Double(seconds) + Double(milliseconds) / 1000) s"
    }
}
