import Foundation

/// The result of a finished command.
public struct CommandResult: Sendable {
    /// The exit status.
    public var status: Int32
    /// Everything written to standard output.
    public var output: String
    /// Everything written to standard error.
    public var error: String
}

/// A command that failed.
public struct CommandFailure: Error, CustomStringConvertible {
    /// The command line.
    public var command: [String]
    /// What it returned.
    public var result: CommandResult
    public var description: String {
        "`\(command.joined(separator: " "))` exited \(result.status): \(result.error)\(result.output)"
    }
}

/// Runs a program (looked up in PATH) with arguments, optionally feeding standard input, and
/// waits for it. Never goes through a shell.
@discardableResult
public func run(_ arguments: [String], input: String? = nil, check: Bool = true) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let inputPipe = input.map { _ in Pipe() }
    if let inputPipe { process.standardInput = inputPipe } else { process.standardInput = FileHandle.nullDevice }
    try process.run()
    if let inputPipe, let input {
        inputPipe.fileHandleForWriting.write(Data(input.utf8))
        try inputPipe.fileHandleForWriting.close()
    }
    // Read both pipes to the end before waiting, so a chatty child cannot block on a full pipe.
    let group = DispatchGroup()
    nonisolated(unsafe) var errorData = Data()
    group.enter()
    DispatchQueue.global().async {
        errorData = err.fileHandleForReading.readDataToEndOfFile()
        group.leave()
    }
    let outputData = out.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    let result = CommandResult(status: process.terminationStatus,
                               output: String(decoding: outputData, as: UTF8.self),
                               error: String(decoding: errorData, as: UTF8.self))
    if check && result.status != 0 { throw CommandFailure(command: arguments, result: result) }
    return result
}

/// True when the tests run as root, which the namespace tests need.
public let runningAsRoot: Bool = geteuid() == 0

/// True when `ip netns` works here (root, iproute2 installed).
public let namespacesAvailable: Bool = {
    guard runningAsRoot else { return false }
    return (try? run(["ip", "netns", "list"], check: false).status) == 0
}()
