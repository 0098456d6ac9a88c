import Foundation
import Synchronization

/// The `reach` executable that `swift build` put beside the test bundle (or `$REACH_BINARY`).
public let reachBinary: String = {
    if let path = ProcessInfo.processInfo.environment["REACH_BINARY"] { return path }
    return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("reach").path
}()

/// Starts `reach` with `arguments`, its standard output into `output`, its standard error
/// discarded.
public func launchReach(_ arguments: [String], output: Pipe) throws -> Process {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: reachBinary)
    process.arguments = arguments
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

/// A `reach` process that keeps running (events, watch), read line by line.
public final class ReachProcess: Sendable {
    private let process: Process
    /// Every line printed so far.
    public let lines = Mutex<[String]>([])

    /// Starts `reach` with `arguments`; standard error is discarded.
    public init(_ arguments: [String]) throws {
        let pipe = Pipe()
        let process = try launchReach(arguments, output: pipe)
        self.process = process
        forEachLine(of: pipe.fileHandleForReading) { [weak self] line in self?.lines.withLock { $0.append(line) } }
    }

    /// Waits (bounded, for liveness only) until a line contains every fragment.
    public func waitForLine(containing fragments: String...) -> Bool {
        awaitLine(in: lines, containing: fragments)
    }

    /// The process's id.
    public var processIdentifier: Int32? { process.isRunning ? process.processIdentifier : nil }

    /// Whether the process still runs.
    public var isRunning: Bool { process.isRunning }

    /// Waits (bounded, for liveness only) until the process exits by itself; its exit status,
    /// or nil if it still runs.
    public func exitStatus() -> Int32? {
        guard (eventually { !process.isRunning }) else { return nil }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Ends the process (SIGTERM) and waits for it.
    public func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// Reads `handle` on a thread of its own until end of file, and hands `line` each complete
/// line (without its newline) as it arrives.
public func forEachLine(of handle: FileHandle, _ line: @escaping @Sendable (String) -> Void) {
    Thread.detachNewThread {
        var buffer = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { return }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                line(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                buffer.removeSubrange(buffer.startIndex...newline)
            }
        }
    }
}

/// Waits (bounded, for liveness only) until one of `lines` contains every fragment.
public func awaitLine(in lines: borrowing Mutex<[String]>, containing fragments: [String]) -> Bool {
    eventually { lines.withLock { $0.contains { line in fragments.allSatisfy(line.contains) } } }
}
