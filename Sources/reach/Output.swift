import Glibc

/// Writes whole lines to standard output with one `write(2)` each, so that every line reaches a
/// pipe the moment it is printed (scripts and the latency harness read line by line).
enum Output {
    static func line(_ text: String) { writeAll(STDOUT_FILENO, text + "\n") }

    /// One line on standard error, prefixed with the tool's name.
    static func error(_ text: String) { writeAll(STDERR_FILENO, "reach: \(text)\n") }

    private static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                exit(errno == EPIPE ? 0 : 2)
            }
            offset += n
        }
    }
}
