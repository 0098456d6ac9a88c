import Foundation
import Testing
@testable import LinuxReachability

/// A hosts file is indexed once per version: names are found in any case, with their
/// addresses in file order and without duplicates; a file rewritten or replaced is read again.
struct HostsFileIndexTests {
    @Test func aHostsFileIsIndexedOncePerVersion() async throws {
        let path = NSTemporaryDirectory() + "reach-hosts-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try "10.0.0.1 db.example.test db\n# 10.0.0.9 db.example.test\n10.0.0.2\tDB.Example.Test # second\n10.0.0.1 db.example.test\nnot-an-address db.example.test\n"
            .write(toFile: path, atomically: false, encoding: .utf8)
        let resolver = HostsFileResolver(path: path)
        #expect(try await resolver.resolve("db.example.test") == [IPAddress("10.0.0.1")!, IPAddress("10.0.0.2")!])
        #expect(try await resolver.resolve("DB") == [IPAddress("10.0.0.1")!])
        #expect(try await resolver.resolve("other.example.test") == [])
        // Rewritten in place, to the same size: read again.
        try "10.0.0.3 db.example.test db\n# 10.0.0.9 db.example.test\n10.0.0.4\tDB.Example.Test # second\n10.0.0.3 db.example.test\nnot-an-address db.example.test\n"
            .write(toFile: path, atomically: false, encoding: .utf8)
        #expect(try await resolver.resolve("db.example.test") == [IPAddress("10.0.0.3")!, IPAddress("10.0.0.4")!])
        // Replaced by another file.
        try "2001:db8::7 db.example.test\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try await resolver.resolve("db.example.test") == [IPAddress("2001:db8::7")!])
        try FileManager.default.removeItem(atPath: path)
        await #expect(throws: ReachabilityError.self) { try await resolver.resolve("db.example.test") }
    }

    /// The hosts files of namespaces that went away (`/etc/netns/NAME/hosts`) are forgotten
    /// once the index holds more than a few files: a service that watches short-lived
    /// namespaces keeps no answers for each one it ever saw.
    @Test func filesThatAreGoneAreForgotten() async throws {
        let directory = NSTemporaryDirectory() + "reach-hosts-gone-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let count = HostsFileIndex.prunedFrom + 4
        for index in 0..<count {
            try "10.0.0.\(index) db.test\n".write(toFile: directory + "/hosts\(index)", atomically: false, encoding: .utf8)
        }
        // Answers are kept only for files older than the kernel's change-time tick.
        try await Task.sleep(for: .milliseconds(100))
        for index in 0..<count {
            #expect(HostsFileIndex.addresses(of: "db.test", inFileAt: directory + "/hosts\(index)") == [IPAddress("10.0.0.\(index)")!])
            #expect(HostsFileIndex.keepsAnswers(of: directory + "/hosts\(index)"))
        }
        for index in 0..<count { try FileManager.default.removeItem(atPath: directory + "/hosts\(index)") }
        try "10.0.0.99 db.test\n".write(toFile: directory + "/last", atomically: false, encoding: .utf8)
        try await Task.sleep(for: .milliseconds(100))
        #expect(HostsFileIndex.addresses(of: "db.test", inFileAt: directory + "/last") == [IPAddress("10.0.0.99")!])
        #expect(HostsFileIndex.keepsAnswers(of: directory + "/last"))
        #expect(!(0..<count).contains { HostsFileIndex.keepsAnswers(of: directory + "/hosts\($0)") })
    }
}
