// Watches an address until SIGTERM: prints each answer, then "stopped" on graceful shutdown.
import Glibc
import LinuxReachability
import Logging
import ReachabilityService
import ServiceLifecycle

let arguments = CommandLine.arguments
guard arguments.count == 2, let address = IPAddress(arguments[1]) else {
    print("usage: ServiceStop ADDRESS")
    exit(2)
}
/// Writes one line at once, unbuffered, also into a pipe.
@Sendable func say(_ line: String) {
    var text = line + "\n"
    text.withUTF8 { _ = write(STDOUT_FILENO, $0.baseAddress, $0.count) }
}
let logger = Logger(label: "service-stop")
let watch = ReachabilityService(target: .address(address), logger: logger) { answer in
    say("answer: \(answer.isReachable ? "reachable" : "not reachable")")
}
let group = ServiceGroup(services: [watch], gracefulShutdownSignals: [.sigterm], logger: logger)
try await group.run()
say("stopped")
