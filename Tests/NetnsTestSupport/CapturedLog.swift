import Logging
import Synchronization

/// What a logger of the test's own was told: each message with its level and metadata.
public final class CapturedLog: Sendable {
    /// One message.
    public struct Entry: Sendable {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
    }

    private let entries = Mutex<[Entry]>([])

    /// An empty log.
    public init() {}

    /// A logger that records here everything from `trace` up.
    public var logger: Logger {
        var logger = Logger(label: "test", factory: { _ in Handler(log: self) })
        logger.logLevel = .trace
        return logger
    }

    /// The entries so far.
    public var all: [Entry] { entries.withLock { $0 } }

    /// The entries whose message contains `text`.
    public func entries(containing text: String) -> [Entry] { all.filter { $0.message.contains(text) } }

    fileprivate func record(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            log.record(Entry(level: event.level, message: "\(event.message)",
                             metadata: merged.mapValues { "\($0)" }))
        }
    }
}
