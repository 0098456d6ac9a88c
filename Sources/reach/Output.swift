import Dispatch
import Glibc
import Netlink
import Synchronization

/// Writes whole lines to standard output with one `write(2)` each, so that every line reaches a
/// pipe the moment it is printed (scripts and the latency harness read line by line).
enum Output {
    /// Ends the process with `status`, once: the thread that watches for the reader, a thread
    /// whose write met a closed pipe and the main thread may all decide to end at the same
    /// moment, and glibc's `exit(3)` is not safe to run on two threads at once (each would run
    /// the `atexit` handlers). Later callers wait for the first one's exit.
    static func end(_ status: Int32) -> Never {
        if ending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            exit(status)
        }
        while true { pause() }
    }

    private static let ending = Atomic<Bool>(false)

    static func line(_ text: String) {
        var line = text
        line.append("\n")
        writeAll(STDOUT_FILENO, &line)
    }

    /// Writes `bytes` (whole lines, each ending in a newline) with as few `write(2)` calls as
    /// the pipe allows: the lines of one batch of events leave together.
    static func lines(_ bytes: UnsafeBufferPointer<UInt8>) {
        writeAll(STDOUT_FILENO, UnsafeRawBufferPointer(bytes))
    }

    /// Lets whatever is ready to run on this thread's CPU run first, after a streaming command
    /// wrote the first line after a quiet spell: first of all a reader of the pipe that the
    /// write woke.
    ///
    /// Linux puts a thread woken by a pipe write on the writer's CPU, expecting the writer to
    /// sleep soon; `reach watch` and `reach events` do not, since the rest of the kernel's burst
    /// (a link going down brings its route and address removals, then a second evaluation)
    /// still waits to be read. A reader on that CPU took the line only when the tool went back
    /// to sleep: in a trace of the latency harness's flips
    /// (`Benchmarks/profiles/line_to_reader.py`), a median 89 µs after `reach watch` wrote it
    /// and 658 µs on the first flip; with this yield, 30 and 38 µs. With nothing else ready to
    /// run on the CPU, the call returns at once.
    ///
    /// Only a line that follows ``quietSpell`` without one yields. The rest of a burst is
    /// written within a fraction of a millisecond of its first line, which the reader was
    /// given the CPU for; and under a stream of changes (a routing daemon adding routes), one
    /// `sched_yield(2)` per written batch was one system call in five of `reach events` and 7 %
    /// of its CPU, while the tool sleeps between its batches anyway.
    static func yieldToReader() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = UInt64(now.tv_sec) &* 1_000_000_000 &+ UInt64(now.tv_nsec)
        let previous = lastStreamedLine.exchange(nanoseconds, ordering: .relaxed)
        if nanoseconds &- previous >= quietSpell { sched_yield() }
    }

    /// How long a streaming command writes nothing before its next line yields to the reader:
    /// longer than a burst takes to print, shorter than the gap between two changes that a
    /// person or a script makes.
    static let quietSpell: UInt64 = 1_000_000

    /// When `yieldToReader` last ran (`CLOCK_MONOTONIC`, nanoseconds).
    private static let lastStreamedLine = Atomic<UInt64>(0)

    /// Ends the tool with 0 when the reader of standard output goes away, even while nothing is
    /// printed: a thread sleeps in `poll(2)` on standard output for no event, which reports only
    /// an error or hang-up (`POLLERR` when a pipe's reader closed it, as `head -1` does).
    /// Without it a long-running command in a quiet namespace would learn of the closed pipe
    /// only at its next line. A terminal or file never reports one; the thread then sleeps for
    /// good and never wakes the process.
    static func exitWhenTheReaderGoes() {
        let watcher = DispatchQueue(label: "reach.stdout-watch")
        watcher.async {
            var descriptor = pollfd(fd: STDOUT_FILENO, events: 0, revents: 0)
            while true {
                let ready = poll(&descriptor, 1, -1)
                if ready < 0, errno == EINTR { continue }
                if ready > 0, descriptor.revents & Int16(POLLERR | POLLHUP) != 0 { end(0) }
                // POLLNVAL (standard output was closed: it is /dev/null since start-up) or an
                // error of poll itself: there is no reader to watch.
                return
            }
        }
    }

    /// One line on standard error, prefixed with the tool's name. Control characters and line
    /// separators become `?`: argument-parser's messages quote the arguments as they came.
    static func error(_ text: String) {
        let shown = text.unicodeScalars.map { $0.breaksALine ? "?" : String($0) }.joined()
        var line = "reach: \(shown)\n"
        writeAll(STDERR_FILENO, &line)
    }

    /// Writes the string's UTF-8 bytes in place (a native string is contiguous: no copy).
    private static func writeAll(_ fd: Int32, _ text: inout String) {
        text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
    }

    /// Writes every byte, going on after short writes and interruptions. A closed pipe ends the
    /// tool quietly (exit 0, like `head` closing it; `main` ignores SIGPIPE so that the write
    /// returns `EPIPE`); any other failure of standard output (a full disk, a closed descriptor)
    /// exits 2 with one line on standard error.
    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, base + offset, bytes.count - offset)
            if n < 0 {
                let failure = errno
                if failure == EINTR { continue }
                if failure == EPIPE { end(0) }
                if fd == STDOUT_FILENO { error("cannot write to standard output: \(String(cString: strerror(failure)))") }
                end(2)
            }
            offset += n
        }
    }
}
