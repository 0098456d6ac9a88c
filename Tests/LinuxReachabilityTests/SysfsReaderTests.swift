import Foundation
import Glibc
import Testing
import LinuxReachability

/// The sysfs reader on small trees built here, odd ones included.
@Suite("Sysfs reader")
struct SysfsReaderTests {
    /// A temporary directory that deletes itself.
    final class TemporaryTree {
        let root: String
        init() throws {
            var template = Array((NSTemporaryDirectory() + "sysfs-test-XXXXXX").utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            root = String(cString: made)
        }
        deinit { try? FileManager.default.removeItem(atPath: root) }

        func file(_ path: String, _ text: String) throws {
            try directory((path as NSString).deletingLastPathComponent)
            try text.write(toFile: root + "/" + path, atomically: false, encoding: .utf8)
        }
        func directory(_ path: String) throws {
            try FileManager.default.createDirectory(atPath: root + "/" + path, withIntermediateDirectories: true)
        }
        func symlink(_ path: String, to target: String) throws {
            try directory((path as NSString).deletingLastPathComponent)
            try FileManager.default.createSymbolicLink(atPath: root + "/" + path, withDestinationPath: target)
        }
    }

    @Test func readsAPhysicalWiFiLink() throws {
        let tree = try TemporaryTree()
        let net = "devices/pci0000:00/0000:00:14.3/net/wlp0s20f3"
        try tree.file(net + "/uevent", "DEVTYPE=wlan\nINTERFACE=wlp0s20f3\nIFINDEX=3\n")
        try tree.symlink(net + "/device", to: "../../../0000:00:14.3")
        try tree.symlink(net + "/phy80211", to: "../../ieee80211/phy0")
        try tree.file("devices/pci0000:00/0000:00:14.3/ieee80211/phy0/name", "phy0\n")
        try tree.file(net + "/wireless/status", "0x0\n")
        try tree.symlink("devices/pci0000:00/0000:00:14.3/driver", to: "../../../bus/pci/drivers/iwlwifi")
        try tree.symlink("devices/pci0000:00/0000:00:14.3/subsystem", to: "../../../bus/pci")
        try tree.file("bus/pci/drivers/iwlwifi/uevent", "")
        try tree.symlink("class/net/wlp0s20f3", to: "../../" + net)

        let facts = SysfsReader(root: tree.root).facts(forLinkNamed: "wlp0s20f3")
        #expect(facts == SysfsFacts(isPresent: true, interfaceIndex: 3, deviceType: "wlan", hasPhy80211: true,
                                    hasWirelessDirectory: true, hasDevice: true, driver: "iwlwifi", bus: "pci"))
    }

    @Test func missingLinksAndImpossibleNamesGiveNoEvidence() throws {
        let tree = try TemporaryTree()
        try tree.file("class/net/eth0/uevent", "INTERFACE=eth0\nIFINDEX=2\n")
        try tree.file("secret/uevent", "DEVTYPE=wlan\n")
        let reader = SysfsReader(root: tree.root)
        #expect(reader.facts(forLinkNamed: "eth1") == .absent)
        for name in ["", ".", "..", "../../secret", "a/b", "eth0 ", "x:y", String(repeating: "e", count: 16), "\u{7f}"] {
            #expect(reader.facts(forLinkNamed: name) == .absent, "\(name)")
        }
        #expect(SysfsReader(root: tree.root + "/nowhere").facts(forLinkNamed: "eth0") == .absent)
        let plain = reader.facts(forLinkNamed: "eth0")
        #expect(plain == SysfsFacts(isPresent: true, interfaceIndex: 2))
    }

    @Test func oddFilesMeanNoEvidenceNeverACrashOrAHang() throws {
        let tree = try TemporaryTree()
        // uevent is a FIFO: opening it blocking would hang forever.
        try tree.directory("class/net/fifo0")
        #expect(mkfifo(tree.root + "/class/net/fifo0/uevent", 0o600) == 0)
        // uevent is a directory; device and driver links dangle; phy80211 is a plain file.
        try tree.directory("class/net/dir0/uevent")
        try tree.symlink("class/net/dir0/device", to: "../../nowhere")
        try tree.file("class/net/dir0/phy80211", "not a link")
        // Binary junk, a DEVTYPE with spaces, an oversized DEVTYPE, an IFINDEX that is not a number.
        try tree.file("class/net/junk0/uevent", "\u{0}\u{1}\u{ff}DEVTYPE=wl an\nIFINDEX=abc\n")
        try tree.file("class/net/long0/uevent", "DEVTYPE=" + String(repeating: "w", count: 100) + "\n")
        // A huge uevent: only the first 4 KiB are read.
        try tree.file("class/net/huge0/uevent", String(repeating: "X=1\n", count: 100_000) + "DEVTYPE=wlan\n")
        // A driver link whose target ends in junk.
        try tree.directory("devices/d")
        try tree.symlink("devices/d/driver", to: "../../bus/x/drivers/\u{1}bad")
        try tree.symlink("class/net/bad0", to: "../../devices/d/net/bad0")
        try tree.symlink("devices/d/net/bad0/device", to: "../..")
        // The link entry is a file, not a directory.
        try tree.file("class/net/file0", "x")

        let reader = SysfsReader(root: tree.root)
        #expect(reader.facts(forLinkNamed: "fifo0") == SysfsFacts(isPresent: true))
        let dir0 = reader.facts(forLinkNamed: "dir0")
        #expect((dir0.deviceType, dir0.hasDevice, dir0.driver, dir0.hasPhy80211) == (nil, true, nil, true))
        let junk = reader.facts(forLinkNamed: "junk0")
        #expect((junk.deviceType, junk.interfaceIndex) == (nil, nil))
        #expect(reader.facts(forLinkNamed: "long0").deviceType == nil)
        #expect(reader.facts(forLinkNamed: "huge0").deviceType == nil)
        let bad = reader.facts(forLinkNamed: "bad0")
        #expect((bad.hasDevice, bad.driver) == (true, nil))
        #expect(reader.facts(forLinkNamed: "file0") == .absent)
    }
}
