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
}
