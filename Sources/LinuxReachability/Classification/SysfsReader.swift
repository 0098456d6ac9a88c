import Glibc
import Netlink

/// Reads the ``SysfsFacts`` of network links from a sysfs tree.
///
/// The tree is `/sys` by default; tests and the `--sysfs-root` option of `reach` point it at
/// a fixture. Reading never fails: a missing, unreadable or odd entry (a directory where a file
/// should be, a FIFO, binary junk, a dangling link) is "no evidence". Files are opened
/// non-blocking and only regular files are read, at most 4 KiB each, so a crafted tree cannot
/// hang or exhaust the reader.
///
/// `/sys/class/net` shows the links of the network namespace that mounted it. To read the
/// facts of another namespace's links, use ``LinkClassificationCache`` with ``SysfsSource/live(_:)``, which
/// reads through a sysfs mounted for that namespace (`NetworkNamespace.openSysfs()`), or a
/// reader of such a tree, ``init(directory:)``.
package struct SysfsReader: Sendable, Hashable {
    /// The directory that plays the role of `/sys`. A reader of an open tree
    /// (``init(directory:)``) reads that tree and holds its description here; setting it
    /// changes nothing there.
    package var root: String
    /// The open tree read instead of `root`, if any.
    private let directory: SysfsDirectory?

    /// A reader of the sysfs tree at `root`.
    package init(root: String = "/sys") {
        self.root = root
        directory = nil
    }

    /// A reader of an open sysfs tree (`NetworkNamespace.openSysfs()`): another namespace's
    /// links, read from any thread without a mount per read.
    package init(directory: SysfsDirectory) {
        root = directory.description
        self.directory = directory
    }

    /// The facts of the link named `name`, or ``SysfsFacts/absent`` when sysfs has no such
    /// link or `name` cannot be a link name (empty, longer than 15 bytes, containing `/` or
    /// whitespace, `.` or `..`).
    ///
    /// - Parameters:
    ///   - name: The link's name, as rtnetlink gives it.
    ///   - listingLowerLinks: Whether to list the link's directory for
    ///     ``SysfsFacts/lowerLinkNames`` when it has no parent device and no `DEVTYPE`. Pass
    ///     `false` for a link with an rtnetlink kind, which the classifier never resolves that
    ///     way: it spares a directory listing per veth of a container host.
    package func facts(forLinkNamed name: String, listingLowerLinks: Bool = true) -> SysfsFacts {
        guard Self.isPlausibleLinkName(name) else { return .absent }
        // The link's path is walked once (`/sys/class/net/NAME`, a symbolic link into
        // `/sys/devices`); each entry is then looked up in its directory. Walking the whole
        // path for each entry made a monitor's start-up with 1 000 links 12 % slower.
        let flags = O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC
        let directory = self.directory.map { openat($0.descriptor, "class/net/" + name, flags) } ?? open(root + "/class/net/" + name, flags)
        guard directory >= 0 else { return .absent }
        defer { close(directory) }
        var facts = SysfsFacts(isPresent: true)
        for line in Self.readSmallFile("uevent", in: directory)?.split(whereSeparator: \.isNewline) ?? [] {
            if line.hasPrefix("DEVTYPE=") {
                facts.deviceType = Self.token(line.dropFirst("DEVTYPE=".count))
            } else if line.hasPrefix("IFINDEX=") {
                facts.interfaceIndex = Int32(line.dropFirst("IFINDEX=".count))
            }
        }
        facts.hasPhy80211 = Self.exists("phy80211", in: directory)
        facts.hasWirelessDirectory = Self.isDirectory("wireless", in: directory)
        facts.hasDevice = Self.exists("device", in: directory)
        if facts.hasDevice {
            facts.driver = Self.linkTargetName("device/driver", in: directory)
            facts.bus = Self.linkTargetName("device/subsystem", in: directory)
        } else if listingLowerLinks, facts.deviceType == nil {
            facts.lowerLinkNames = Self.lowerLinkNames(in: directory)
        }
        return facts
    }

    /// The names after `lower_` of the entries of the open directory `directory` that could
    /// name links, sorted; at most 16 of them, from at most 4 096 entries, so that a crafted
    /// tree cannot make the reader list without end.
    static func lowerLinkNames(in directory: Int32) -> [String] {
        // A descriptor of its own: `closedir` closes the one it was given.
        let listed = openat(directory, ".", O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC)
        guard listed >= 0 else { return [] }
        guard let stream = fdopendir(listed) else {
            close(listed)
            return []
        }
        defer { closedir(stream) }
        var names: [String] = []
        var scanned = 0
        while scanned < 4096, names.count < 16, let entry = readdir(stream) {
            scanned += 1
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasPrefix("lower_") else { continue }
            let link = String(name.dropFirst("lower_".count))
            if isPlausibleLinkName(link) { names.append(link) }
        }
        return names.sorted()
    }

    /// Whether `name` could name a Linux network link (`dev_valid_name()` in the kernel).
    static func isPlausibleLinkName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count < 16, name != ".", name != ".." else { return false }
        return !bytes.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") || $0 <= 0x20 || $0 == 0x7f }
    }

    /// A `uevent` value kept only if it looks like one: printable ASCII, at most 64 bytes.
    static func token(_ text: Substring) -> String? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 64, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        return String(text)
    }

    /// Whether `path` (relative to the directory `directory`, or absolute) names anything,
    /// a dangling symbolic link included.
    static func exists(_ path: String, in directory: Int32 = AT_FDCWD) -> Bool {
        var status = stat()
        return fstatat(directory, path, &status, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// Whether `path` (relative to the directory `directory`, or absolute) is a directory, or
    /// a symbolic link to one.
    static func isDirectory(_ path: String, in directory: Int32 = AT_FDCWD) -> Bool {
        var status = stat()
        return fstatat(directory, path, &status, 0) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    /// The last path component of the target of the symbolic link at `path` (relative to the
    /// directory `directory`, or absolute), if it is one.
    static func linkTargetName(_ path: String, in directory: Int32 = AT_FDCWD) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        let count = readlinkat(directory, path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let target = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let last = target.split(separator: "/").last else { return nil }
        return token(last)
    }

    /// The text of a regular file at `path` (relative to the directory `directory`, or
    /// absolute), its first `limit` bytes (4 KiB by default: sysfs attributes are one page at
    /// most), or `nil` for anything else (see ``FileContents/bytes(at:in:limit:)``).
    static func readSmallFile(_ path: String, in directory: Int32 = AT_FDCWD, limit: Int = 4096) -> String? {
        FileContents.bytes(at: path, in: directory, limit: limit).map { String(decoding: $0, as: UTF8.self) }
    }
}
