import Dispatch
import Foundation
import Glibc
import PropertyBased
import LinuxReachability
import Testing

/// `SysfsReader` on random sysfs trees built in a temporary directory.
///
/// Property: whatever the tree holds (a `uevent` of random bytes, invalid UTF-8, NUL bytes, lines
/// without `=`, no trailing newline, 1 to 10 MiB; a FIFO, a directory, a symbolic-link loop or a
/// dangling link in place of a file; random `type` contents; missing entries; random link
/// targets) the reader returns within seconds, never crashes, and its facts are those of a
/// model of the documented rules: the link is present only if `class/net/NAME` leads to a
/// directory; `DEVTYPE=` and `IFINDEX=` come from the first 4 KiB of a regular `uevent` only,
/// and `DEVTYPE` only as printable ASCII of 1 to 64 bytes; `driver` and `bus` are the last
/// component of the link's target under the same rule; `phy80211` and `device` count when any
/// entry is there, `wireless` only as a directory. Anything odd is "no evidence".
@Suite("Bad input: sysfs contents")
struct SysfsContentTests {
    // MARK: A random tree

    /// What stands at a path where the reader expects a file, a directory or a link.
    enum Entry: CustomStringConvertible {
        case missing
        case file([UInt8])
        case directory
        case fifo
        /// A link to itself: every lookup through it fails with `ELOOP`.
        case loop
        /// A link to a path that does not exist.
        case dangling
        /// A symbolic link with this target (any bytes but NUL).
        case link([UInt8])

        var description: String {
            switch self {
            case .missing: return "missing"
            case .file(let bytes): return "file(\(bytes.count) bytes: \(show(bytes)))"
            case .directory: return "directory"
            case .fifo: return "fifo"
            case .loop: return "loop"
            case .dangling: return "dangling"
            case .link(let target): return "link(\(show(target)))"
            }
        }
    }

    /// One random tree: the entries of `class/net/eth0` and what the reader should report.
    struct Case: CustomStringConvertible, Sendable {
        /// What `class/net/eth0` is: a directory, or something else (then nothing is read).
        var linkEntry: String
        /// The bytes of `uevent`, its size after sparse extension (1 to 10 MiB) or nil, or a
        /// non-file entry.
        var uevent: Entry
        var ueventSize: Int?
        var type: Entry
        var phy80211: Entry
        var wireless: Entry
        /// `device`: missing, dangling, a loop, or a directory holding `driver` and `subsystem`.
        var device: Entry
        var driver: Entry
        var subsystem: Entry
        /// What the fields generated into `uevent` say, before the reader's own rules.
        var devtypeLine: [UInt8]?
        var ifindexLine: [UInt8]?
        /// True when the generated lines lie inside the first 4 KiB (the part the reader reads).
        var fieldsAreRead: Bool

        var description: String {
            "eth0=\(linkEntry) uevent=\(uevent) size=\(ueventSize.map(String.init) ?? "-") type=\(type) "
                + "phy80211=\(phy80211) wireless=\(wireless) device=\(device) driver=\(driver) subsystem=\(subsystem)"
        }
    }

    /// Up to 60 bytes, escaped, for failure messages.
    static func show(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(60), as: UTF8.self).debugDescription + (bytes.count > 60 ? "…" : "")
    }

    static func bytes(_ count: ClosedRange<Int>, _ rng: inout any SeededRandomNumberGenerator,
                      excluding excluded: Set<UInt8> = []) -> [UInt8] {
        (0..<Int.random(in: count, using: &rng)).map { _ in
            var byte = UInt8.random(in: 0...255, using: &rng)
            while excluded.contains(byte) { byte = UInt8.random(in: 0...255, using: &rng) }
            return byte
        }
    }

    /// A `DEVTYPE` value: usually a plausible token, sometimes one with a space, a control
    /// character, non-ASCII, 65 bytes or nothing. Never a line break.
    static func devtypeValue(_ rng: inout any SeededRandomNumberGenerator) -> [UInt8] {
        let values = ["wlan", "wwan", "bridge", "bond", "vlan", "bluetooth", "", "wl an", "wl\u{1}an", "wlän", "wlan\u{0}",
                      String(repeating: "w", count: 64), String(repeating: "w", count: 65), "=", "DEVTYPE=wlan", "\u{7f}"]
        return Array(values.randomElement(using: &rng)!.utf8)
    }

    static func ifindexValue(_ rng: inout any SeededRandomNumberGenerator) -> [UInt8] {
        let values = ["2", "0", "-1", "+5", "2147483647", "2147483648", "-2147483648", "99999999999999999999", "", " 3",
                      "3 ", "abc", "٣", "0x10", "1e3", "3\u{0}"]
        return Array(values.randomElement(using: &rng)!.utf8)
    }

    /// A random entry for a place where the reader expects a link (`driver`, `subsystem`).
    static func linkEntry(_ rng: inout any SeededRandomNumberGenerator, name: String) -> Entry {
        switch Int.random(in: 0...9, using: &rng) {
        case 0: return .missing
        case 1: return .fifo
        case 2: return .loop
        case 3: return .file(bytes(0...20, &rng))
        case 4: return .directory
        case 5: return .link(bytes(1...300, &rng, excluding: [0]))
        case 6: return .link(Array("../../../bus/pci/drivers/\(name)/".utf8) + bytes(0...3, &rng, excluding: [0]))
        default: return .link(Array("../../../bus/\(["pci", "usb", "virtio", "sdio"].randomElement(using: &rng)!)/drivers/\(name)".utf8))
        }
    }

    static func anyEntry(_ rng: inout any SeededRandomNumberGenerator) -> Entry {
        [.missing, .file(bytes(0...10, &rng)), .directory, .fifo, .loop, .dangling].randomElement(using: &rng)!
    }

    static let cases = Generator<Case, Shrink.None<Case>> { rng in
        var fields: (devtype: [UInt8]?, ifindex: [UInt8]?, read: Bool) = (nil, nil, false)
        var size: Int? = nil
        let uevent: Entry
        switch Int.random(in: 0...9, using: &rng) {
        case 0...3, 8:
            // Junk around generated lines. The junk is any bytes but `D` and `I`, so it cannot
            // spell a field; it may break the UTF-8 of the lines around it, never the lines.
            let before = bytes(0...(Bool.random(using: &rng) ? 1_500 : 6_000), &rng, excluding: [0x44, 0x49])
            let after = bytes(0...1_500, &rng, excluding: [0x44, 0x49])
            let devtype = Bool.random(using: &rng) ? devtypeValue(&rng) : nil
            let ifindex = Bool.random(using: &rng) ? ifindexValue(&rng) : nil
            var text = before + [0x0a]
            if let devtype { text += Array("DEVTYPE=".utf8) + devtype + [0x0a] }
            if let ifindex { text += Array("IFINDEX=".utf8) + ifindex + [0x0a] }
            let linesEnd = text.count
            text += after
            fields = (devtype, ifindex, linesEnd <= 4_096)
            if before.count > 4_096 || linesEnd <= 4_096 {   // never a line cut in two by the 4 KiB limit
                uevent = .file(text)
                if Int.random(in: 0...4, using: &rng) == 0 { size = Int.random(in: (1 << 20)...(10 << 20), using: &rng) }
            } else {
                uevent = .file(before)
                fields = (nil, nil, false)
            }
        case 4: uevent = .file(bytes(0...6_000, &rng))
        default: uevent = anyEntry(&rng)
        }
        let device: Entry = [.missing, .dangling, .loop, .directory, .directory, .directory].randomElement(using: &rng)!
        return Case(
            linkEntry: ["directory", "directory", "directory", "symlink", "loop", "file", "missing", "dangling"]
                .randomElement(using: &rng)!,
            uevent: uevent, ueventSize: size,
            type: [.missing, .file(bytes(0...100, &rng)), .fifo, .file(Array("1\n".utf8))].randomElement(using: &rng)!,
            phy80211: anyEntry(&rng), wireless: anyEntry(&rng), device: device,
            driver: linkEntry(&rng, name: "e1000e"), subsystem: linkEntry(&rng, name: "pci"),
            devtypeLine: fields.devtype, ifindexLine: fields.ifindex, fieldsAreRead: fields.read)
    }

    // MARK: Building the tree

    /// A temporary directory, deleted when released.
    final class TemporaryTree {
        let root: String
        init() throws {
            var template = Array((FileManager.default.temporaryDirectory.path + "/bad-sysfs-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            root = String(cString: made)
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }

        func make(_ path: String, _ entry: Entry, size: Int? = nil) throws {
            let full = root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            let ok: Bool
            switch entry {
            case .missing: ok = true
            case .file(let bytes):
                let fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                ok = fd >= 0 && bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
                    && (size.map { ftruncate(fd, off_t(max($0, bytes.count))) == 0 } ?? true)   // sparse: instant
                if fd >= 0 { close(fd) }
            case .directory: ok = mkdir(full, 0o755) == 0
            case .fifo: ok = mkfifo(full, 0o600) == 0
            case .loop: ok = symlink((path as NSString).lastPathComponent, full) == 0
            case .dangling: ok = symlink("/nonexistent-sysfs-entry", full) == 0
            case .link(let target): ok = (target.map { CChar(bitPattern: $0) } + [0]).withUnsafeBufferPointer {
                symlink($0.baseAddress!, full) == 0
            }
            }
            if !ok { throw CocoaError(.fileWriteUnknown, userInfo: ["path": full, "errno": errno]) }
        }

        /// Builds `class/net/eth0` (as a directory, or as a link to `devices/v/net/eth0`) and
        /// everything in it.
        func build(_ c: Case) throws {
            var link = "class/net/eth0"
            switch c.linkEntry {
            case "symlink":
                try make(link, .link(Array("../../devices/v/net/eth0".utf8)))
                link = "devices/v/net/eth0"
                try make(link, .directory)
            case "loop": try make(link, .loop)
            case "file": try make(link, .file(Array("eth0".utf8)))
            case "dangling": try make(link, .dangling)
            case "missing": try make("class/net", .directory)
            default: try make(link, .directory)
            }
            guard c.linkEntry == "directory" || c.linkEntry == "symlink" else { return }
            try make(link + "/uevent", c.uevent, size: c.ueventSize)
            try make(link + "/type", c.type)
            try make(link + "/phy80211", c.phy80211)
            try make(link + "/wireless", c.wireless)
            try make(link + "/device", c.device)
            if case .directory = c.device {
                try make(link + "/device/driver", c.driver)
                try make(link + "/device/subsystem", c.subsystem)
            }
        }
    }

    // MARK: The model

    /// Printable ASCII of 1 to 64 bytes, or nil.
    static func token(_ bytes: some Collection<UInt8>) -> String? {
        guard (1...64).contains(bytes.count), bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What a link entry names, by the last component of its target.
    static func linkName(_ entry: Entry, path: String) -> String? {
        switch entry {
        case .link(let target): return target.split(separator: UInt8(ascii: "/")).last.flatMap { token($0) }
        case .loop: return token(Array((path as NSString).lastPathComponent.utf8))
        case .dangling: return "nonexistent-sysfs-entry"
        case .missing, .file, .directory, .fifo: return nil
        }
    }

    static func expectedFacts(_ c: Case) -> SysfsFacts {
        guard c.linkEntry == "directory" || c.linkEntry == "symlink" else { return .absent }
        var facts = SysfsFacts(isPresent: true)
        if case .file = c.uevent, c.fieldsAreRead {
            facts.deviceType = c.devtypeLine.flatMap { token($0) }
            facts.interfaceIndex = c.ifindexLine.flatMap { Int32(String(decoding: $0, as: UTF8.self)) }
        }
        if case .missing = c.phy80211 {} else { facts.hasPhy80211 = true }
        if case .directory = c.wireless { facts.hasWirelessDirectory = true }
        if case .missing = c.device {} else { facts.hasDevice = true }
        if case .directory = c.device {
            facts.driver = linkName(c.driver, path: "driver")
            facts.bus = linkName(c.subsystem, path: "subsystem")
        }
        return facts
    }

    // MARK: The checks

    /// Runs `body` on another thread and waits at most `seconds`: nil if it did not return.
    static func bounded<T: Sendable>(seconds: Double = 10, _ body: @escaping @Sendable () -> T) -> T? {
        let box = ResultBox<T>(), done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            box.value = body()
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return box.value
    }

    @Test func randomTreesGiveTheModelsFacts() async throws {
        await propertyCheck(count: 250, input: Self.cases) { c in
            let tree = try TemporaryTree()
            try tree.build(c)
            let root = tree.root
            let facts = Self.bounded { SysfsReader(root: root).facts(forLinkNamed: "eth0") }
            #expect(facts != nil, "the reader hung on \(c)")
            guard let facts else { return }
            #expect(facts == Self.expectedFacts(c), "\(c)")
            // Whatever the facts, classifying them is fine too.
            _ = LinkClassifier.classify(LinkFacts(index: 2, name: "eth0", arphrdType: .ether, sysfs: facts))
        }
    }

    /// Bytes the calling thread has read through `read(2)` and its kin: `rchar` of
    /// `/proc/thread-self/io` (reading that file counts too, a few hundred bytes).
    static func bytesReadByThisThread() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/thread-self/io", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("rchar:") }.flatMap { Int($0.dropFirst(6).trimmingCharacters(in: .whitespaces)) }
    }

    /// Huge `uevent` files, 1 to 10 MiB with data all the way (not sparse): only the first
    /// 4 KiB count, so a `DEVTYPE` past them is never seen, and the reader reads no more than
    /// that (the thread's count of bytes read, not a clock: far under the file's mebibytes).
    @Test func hugeUeventFilesAreReadOnlyAtTheirStart() async throws {
        await propertyCheck(count: 4, input: Gen.int(in: 1...10), Gen.bool) { mebibytes, early in
            let tree = try TemporaryTree()
            var text = Array("INTERFACE=eth0\nIFINDEX=7\n".utf8)
            if early { text += Array("DEVTYPE=wlan\n".utf8) }
            text += [UInt8](repeating: UInt8(ascii: "x"), count: 5_000) + Array("\nDEVTYPE=wwan\n".utf8)
            text += [UInt8](repeating: 0xff, count: mebibytes << 20)
            try tree.make("class/net/eth0/uevent", .file(text))
            let root = tree.root
            let read = Self.bounded { () -> (SysfsFacts, Int?) in
                let before = Self.bytesReadByThisThread()
                let facts = SysfsReader(root: root).facts(forLinkNamed: "eth0")
                return (facts, Self.bytesReadByThisThread().flatMap { after in before.map { after - $0 } })
            }
            let (facts, bytes) = try #require(read, "the reader hung")
            #expect(facts == SysfsFacts(isPresent: true, interfaceIndex: 7, deviceType: early ? "wlan" : nil))
            // Without task I/O accounting (CONFIG_TASK_IO_ACCOUNTING) there is nothing to count.
            if let bytes {
                #expect(bytes < 64 << 10, "\(bytes) bytes read of a \(mebibytes) MiB file")
            }
        }
    }

    /// Any link name, present in the tree or not: an implausible one (empty, over 15 bytes,
    /// `/`, `:`, whitespace or control characters, `.`, `..`) is never looked up, so `..`
    /// cannot climb out of `class/net`.
    @Test func randomLinkNamesNeverEscapeTheTree() async throws {
        let tree = try TemporaryTree()
        try tree.make("class/net/eth0/uevent", .file(Array("DEVTYPE=wlan\n".utf8)))
        try tree.make("class/uevent", .file(Array("DEVTYPE=secret\n".utf8)))
        try tree.make("uevent", .file(Array("DEVTYPE=secret\n".utf8)))
        try tree.make("class/net/a b/uevent", .file(Array("DEVTYPE=secret\n".utf8)))
        let reader = SysfsReader(root: tree.root)
        let names = Gen<Character?>.element(of: Array("eth0./: \t\u{0}\u{7f}é")).map { $0! }.string(of: 0...18)
        await propertyCheck(count: 300, input: names) { name in
            let bytes = Array(name.utf8)
            let plausible = (1...15).contains(bytes.count) && name != "." && name != ".."
                && !bytes.contains { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") || $0 <= 0x20 || $0 == 0x7f }
            let facts = reader.facts(forLinkNamed: name)
            #expect(facts.deviceType != "secret", "\(name.debugDescription)")
            #expect(facts == (plausible && name == "eth0" ? SysfsFacts(isPresent: true, deviceType: "wlan") : .absent),
                    "\(name.debugDescription)")
        }
        for name in ["..", ".", "../..", "", "a b", "eth0/..", "eth0\u{0}"] {
            #expect(reader.facts(forLinkNamed: name) == .absent, "\(name.debugDescription)")
        }
    }
}

/// A value written by one thread before it signals the semaphore that another waits on.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
