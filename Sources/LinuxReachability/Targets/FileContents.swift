import Glibc

/// Whole small files read with one `read(2)` loop into one buffer, without Foundation.
enum FileContents {
    /// The bytes of the regular file at `path` (relative to the directory `directory`, or
    /// absolute), at most `limit` of them, or nil for anything else (missing, a directory, a
    /// device). The buffer is sized from the file's size (sysfs reports a page for every
    /// attribute), one byte more to see the end. One buffer, freed on return: Foundation's file
    /// reading leaked its buffer, by the address sanitizer, for a file read while rewritten.
    static func bytes(at path: String, in directory: Int32 = AT_FDCWD, limit: Int) -> [UInt8]? {
        let descriptor = openat(directory, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return nil }
        var buffer = [UInt8](repeating: 0, count: min(limit, max(4096, Int(status.st_size) + 1)))
        var filled = 0
        while filled < buffer.count {
            let count = buffer[filled...].withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        buffer.removeSubrange(filled...)
        return buffer
    }

    /// The path that `path` names once every symbolic link in it is followed (`realpath(3)`);
    /// for a dangling link, where it points (the file may appear there); else `path` itself.
    static func resolvingSymbolicLinks(_ path: String) -> String {
        if let resolved = realpath(path, nil) {
            defer { free(resolved) }
            return String(cString: resolved)
        }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        let count = readlink(path, &buffer, buffer.count)
        guard count > 0 else { return path }
        let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard !target.hasPrefix("/"), let slash = path.lastIndex(of: "/") else { return target }
        return String(path[...slash]) + target
    }
}
