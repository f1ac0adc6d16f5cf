@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Stores opened by a user who may not write them (or not read them), and stores whose
/// directory holds what a store should not. Tests run as root, which file permissions do not
/// stop, so there storectl runs as `nobody` (through `setpriv`); run as anyone else, it runs as
/// that user, whom the same file modes keep out.
@Suite(.blocking) struct AccessTests {
    /// A populated demo store at `dir/s`, closed, with every file and the directory readable by all.
    func withSharedStore(_ body: (_ dir: String, _ path: String) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            chmod(dir, 0o755)
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 5, messages: 300, contacts: 10, options: StoreOptions(durability: .none, fileMode: 0o644))
                .close()
            try body(dir, path)
        }
    }

    /// Runs storectl as a user the store's file modes apply to.
    static func storectlAsOtherUser(_ arguments: [String], dir: String) throws -> (status: Int32, stdout: String, stderr: String) {
        guard getuid() == 0 else { return try runTool(storectlURL, arguments) }
        // A copy that `nobody` can reach whatever the permissions on the way to the build directory.
        let binary = dir + "/storectl"
        if !FileManager.default.fileExists(atPath: binary) {
            try FileManager.default.copyItem(atPath: storectlURL.path, toPath: binary)
            chmod(binary, 0o755)
        }
        return try runTool(URL(fileURLWithPath: "/usr/bin/setpriv"),
                           ["--reuid=65534", "--regid=65534", "--clear-groups", binary] + arguments)
    }

    func dump(_ path: String) throws -> String {
        let result = try runTool(storectlURL, ["dump", path, "--entity", "Message", "--jsonl"])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout
    }

    @Test func aUserWhoMayNotWriteReadsAndIsToldWhyWritesFail() throws {
        try withSharedStore { dir, path in
            let before = try dump(path)
            chmod(path + "/data.mdb", 0o444)
            chmod(path + "/lock.mdb", 0o666)

            let read = try Self.storectlAsOtherUser(["dump", path, "--entity", "Message", "--jsonl"], dir: dir)
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.stdout == before)
            let verify = try Self.storectlAsOtherUser(["verify", path], dir: dir)
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")

            // A writer opens the store the usual way: it opens for reading, and the write says why it fails.
            let write = try Self.storectlAsOtherUser(["demo", "mutate", path, "--commits", "1"], dir: dir)
            #expect(write.status == 2)
            #expect(write.stderr.contains("is read-only (data.mdb is not writable by this user); writes are not allowed"), "\(write.stderr)")
            #expect(try dump(path) == before)
        }
    }

    @Test func aReaderWhoMayNotWriteTheLockFileIsToldWhatToChange() throws {
        try withSharedStore { dir, path in
            let before = try dump(path)
            chmod(path + "/data.mdb", 0o444)
            chmod(path + "/lock.mdb", 0o444)

            let refused = try Self.storectlAsOtherUser(["dump", path, "--entity", "Message"], dir: dir)
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("lock.mdb is not writable by this user"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--immutable"))

            // Immutable needs no lock file: the same records, and a clean verify.
            let immutable = try Self.storectlAsOtherUser(["dump", path, "--entity", "Message", "--jsonl", "--immutable"], dir: dir)
            #expect(immutable.status == 0, "\(immutable.stderr)")
            #expect(immutable.stdout == before)
            let verify = try Self.storectlAsOtherUser(["verify", path, "--immutable"], dir: dir)
            #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        }
    }

    @Test func aStoreThisUserMayNotReadIsAClearError() throws {
        try withSharedStore { dir, path in
            chmod(path + "/data.mdb", 0o600)
            let data = try Self.storectlAsOtherUser(["inspect", path], dir: dir)
            #expect(data.status == 2)
            #expect(data.stderr.contains("data.mdb is not readable by this user"), "\(data.stderr)")

            chmod(path, 0o700)
            let directory = try Self.storectlAsOtherUser(["inspect", path], dir: dir)
            #expect(directory.status == 2)
            #expect(directory.stderr.contains("the directory is not accessible to this user"), "\(directory.stderr)")
            chmod(path, 0o755)
        }
    }

    @Test func emptyDirectoriesFilesAndMissingPathsAreNotStores() throws {
        try withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: false)
            FileManager.default.createFile(atPath: dir + "/file", contents: Data("not a store".utf8))
            let cases = [
                ("empty", "the directory holds no data.mdb"),
                ("file", "it is a file; a store is a directory"),
                ("missing", "it does not exist"),
            ]
            for (name, reason) in cases {
                for command in [["inspect"], ["verify"], ["dump", "--entity", "Message"], ["journal"]] {
                    let arguments = [command[0], dir + "/" + name] + command.dropFirst()
                    let result = try runTool(storectlURL, arguments)
                    #expect(result.status == 2, "\(arguments)")
                    #expect(result.stderr.contains("is not a Feedstore store: \(reason)"), "\(arguments): \(result.stderr)")
                }
            }
            // Read-only commands leave an empty directory as they found it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/empty").isEmpty)
        }
    }

    /// A process killed while reading leaves its slot in the lock file's reader table, which
    /// would keep the pages of its snapshot from being reused. The next process to open the
    /// store clears it while another process keeps the environment open.
    @Test func readerSlotsOfKilledProcessesAreCleared() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 9, messages: 2_000, contacts: 10)
            defer { store.close() }

            // A dump whose output nobody reads blocks on a full pipe inside its read transaction.
            let reader = Process()
            reader.executableURL = storectlURL
            reader.arguments = ["dump", path, "--entity", "Message", "--jsonl"]
            let pipe = Pipe()
            reader.standardOutput = pipe
            try reader.run()
            let pid = reader.processIdentifier
            func slotsOfReader() throws -> [ReaderSlot] {
                try store.core.environment.readerTable().filter { $0.pid == Int(pid) }
            }
            let deadline = Date().addingTimeInterval(30)
            while try slotsOfReader().isEmpty, Date() < deadline { usleep(10_000) }
            #expect(try slotsOfReader().count == 1, "the reader never registered")
            kill(pid, SIGKILL)
            reader.waitUntilExit()
            #expect(try slotsOfReader().count == 1, "the killed reader's slot is not left behind")

            let inspect = try runTool(storectlURL, ["inspect", path])
            #expect(inspect.status == 0, "\(inspect.stderr)")
            let left = try slotsOfReader()
            #expect(left.isEmpty, "\(left)")
            try pipe.fileHandleForReading.close()
        }
    }
}
