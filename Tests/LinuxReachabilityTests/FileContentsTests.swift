import Glibc
import NetnsTestSupport
import Testing
@testable import LinuxReachability

/// Files read without Foundation: whole, bounded, and only when regular; symbolic links
/// followed, dangling ones to where they point.
@Suite struct FileContentsTests {
    /// A fresh directory, removed after `body`.
    private func withDirectory(_ body: (String) throws -> Void) throws {
        var template = Array("/tmp/reach-files-XXXXXX".utf8CString)
        let directory = try #require(mkdtemp(&template).map { String(cString: $0) })
        defer { _ = try? run(["rm", "-rf", directory]) }
        try body(directory)
    }

    private func write(_ text: String, to path: String) {
        let file = fopen(path, "w")
        fputs(text, file)
        fclose(file)
    }

    @Test func readsRegularFilesWholeOrUpToTheLimit() throws {
        try withDirectory { directory in
            let text = String(repeating: "0123456789", count: 1000)
            write(text, to: directory + "/big")
            #expect(FileContents.bytes(at: directory + "/big", limit: .max) == Array(text.utf8))
            #expect(FileContents.bytes(at: directory + "/big", limit: 100) == Array(text.utf8.prefix(100)))
            write("", to: directory + "/empty")
            #expect(FileContents.bytes(at: directory + "/empty", limit: .max) == [])
            #expect(FileContents.bytes(at: directory, limit: .max) == nil, "a directory")
            #expect(FileContents.bytes(at: directory + "/missing", limit: .max) == nil)
        }
    }

    @Test func followsSymbolicLinksAndDanglingOnesToWhereTheyPoint() throws {
        try withDirectory { directory in
            write("x", to: directory + "/target")
            symlink("target", directory + "/relative")
            symlink("../elsewhere/stub.conf", directory + "/dangling")
            symlink("/run/none/stub.conf", directory + "/absolute")
            let real = try #require(realpath(directory, nil).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            })
            #expect(FileContents.resolvingSymbolicLinks(directory + "/relative") == real + "/target")
            #expect(FileContents.resolvingSymbolicLinks(directory + "/dangling") == directory + "/../elsewhere/stub.conf")
            #expect(FileContents.resolvingSymbolicLinks(directory + "/absolute") == "/run/none/stub.conf")
            #expect(FileContents.resolvingSymbolicLinks(directory + "/missing") == directory + "/missing")
        }
    }
}
