import Glibc
import Netlink

/// The answers of hosts files, kept per version of each file: a name is looked for once per
/// version (one pass over the file's bytes, comparing names only; an address is parsed only on
/// a line that names it) and answered from what was kept after that. A version is the file's
/// device, inode, size and change time; a file replaced or written since (as blocklist tools
/// rewrite theirs) is read again at its next lookup. The kernel's change times are coarse (a
/// clock tick): answers found within 50 ms of the file's change are not kept, since a second
/// write in the same tick, of the same size, would look like the same version (git's "racy"
/// index entries). Shared by the process; once it holds ``prunedFrom`` files, a new one makes
/// it forget the files that are gone (those of namespaces deleted since).
enum HostsFileIndex {
    /// What identifies one version of a file.
    private struct Version: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var changed: timespec

        static func == (a: Version, b: Version) -> Bool {
            a.device == b.device && a.inode == b.inode && a.size == b.size
                && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
        }
    }

    /// Each file's version and the answers found in it, by lowercased name.
    private static let answers = Locked<[String: (version: Version, byName: [String: [IPAddress]])]>([:])

    /// The addresses of `host` in the hosts file at `path`, in file order; nil when the file
    /// cannot be read.
    static func addresses(of host: String, inFileAt path: String) -> [IPAddress]? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let version = Version(device: UInt64(status.st_dev), inode: UInt64(status.st_ino), size: Int64(status.st_size),
                              changed: status.st_ctim)
        let wanted = host.lowercased()
        if let kept = answers.withLock({ $0[path] }), kept.version == version, let found = kept.byName[wanted] { return found }
        guard let data = FileContents.bytes(at: path, limit: .max) else { return nil }
        let found = data.withUnsafeBytes { addresses(of: Array(wanted.utf8), in: $0) }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let age = Double(now.tv_sec - version.changed.tv_sec) + Double(now.tv_nsec - version.changed.tv_nsec) / 1e9
        guard age > 0.05 else { return found }
        answers.withLock { answers in
            if answers[path] == nil, answers.count >= prunedFrom {
                // The files of namespaces deleted since are never asked for again.
                answers = answers.filter { kept, _ in
                    var status = stat()
                    return stat(kept, &status) == 0
                }
            }
            if answers[path]?.version != version { answers[path] = (version, [:]) }
            answers[path]!.byName[wanted] = found
        }
        return found
    }

    /// How many files are kept before a new one makes the index forget those that are gone.
    static let prunedFrom = 16

    /// Whether answers of the file at `path` are kept.
    static func keepsAnswers(of path: String) -> Bool { answers.withLock { $0[path] != nil } }

    /// The addresses that lines of hosts-file `text` give `name` (lowercase ASCII bytes), in
    /// file order, each once: fields are separated by spaces and tabs, `#` starts a comment,
    /// the first field is the address, names compare without regard to ASCII case.
    static func addresses(of name: [UInt8], in text: UnsafeRawBufferPointer) -> [IPAddress] {
        var found: [IPAddress] = []
        var lineStart = 0
        let count = text.count
        while lineStart < count {
            var lineEnd = lineStart
            while lineEnd < count, text[lineEnd] != UInt8(ascii: "\n"), text[lineEnd] != UInt8(ascii: "\r") { lineEnd += 1 }
            var end = lineStart
            while end < lineEnd, text[end] != UInt8(ascii: "#") { end += 1 }
            // The fields of [lineStart, end).
            var fields: [Range<Int>] = []
            var position = lineStart
            while position < end {
                while position < end, text[position] == UInt8(ascii: " ") || text[position] == UInt8(ascii: "\t") { position += 1 }
                let start = position
                while position < end, text[position] != UInt8(ascii: " "), text[position] != UInt8(ascii: "\t") { position += 1 }
                if start < position { fields.append(start..<position) }
            }
            if fields.count >= 2, fields.dropFirst().contains(where: { field in
                field.count == name.count && zip(field, name).allSatisfy { lowercased(text[$0.0]) == $0.1 }
            }), let address = IPAddress(String(decoding: UnsafeRawBufferPointer(rebasing: text[fields[0]]), as: UTF8.self)),
               !found.contains(address) {
                found.append(address)
            }
            lineStart = lineEnd + 1
        }
        return found
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}
