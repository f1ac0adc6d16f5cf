@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A store one process writes through its commit log (`StoreOptions.keepsCommitLog`) is
/// read-only to every other process, which would otherwise write commits the log does not hold;
/// once that process has closed it, another writes it again and retires the log. A process that
/// finds the store as a machine crash left it recovers it before reading, or, when it may not
/// write the store, refuses to read.
@Suite(.blocking) struct CommitLogProcessTests {
    static var options: StoreOptions {
        var options = StoreOptions(durability: .full)
        options.keepsCommitLog = true
        return options
    }

    @Test func anotherProcessMayOnlyReadAStoreWrittenThroughACommitLog() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            try populatedDemoStore(at: path, seed: 5, messages: 20, contacts: 3).close()
            let store = try Store(path: path, entities: DemoFeed.entities, options: Self.options)
            let file = dir + "/one.jsonl"
            try #"{"contactId": 1, "date": "2026-01-01T09:30:00Z", "folder": 1, "id": 5000, "isRead": false, "title": "hello"}"#
                .appending("\n").write(toFile: file, atomically: true, encoding: .utf8)
            let refused = try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", file])
            #expect(refused.status != 0 && refused.stderr.contains("commit log"), "\(refused.stderr)")
            // inspect tells which process keeps the log, and what it holds since its checkpoint.
            try store.write { try $0.insert(Message(id: 6_000, folder: 1, date: Date(timeIntervalSince1970: 1_800_000_000),
                                                    title: "logged", isRead: false, contactId: 1)) }
            let inspected = try runTool(storectlURL, ["inspect", path, "--format", "json"])
            let report = try JSONDecoder().decode(StoreInspection.self, from: Data(inspected.stdout.utf8))
            let log = try #require(report.commitLog, "\(inspected.stdout)\(inspected.stderr)")
            #expect(log.kept && log.commitsSinceCheckpoint >= 1 && log.bytesSinceCheckpoint > 0 && log.fileSize == 4 << 20)
            // Every transaction since the checkpoint is in the log.
            #expect(log.checkpointTransaction + UInt64(log.commitsSinceCheckpoint) == UInt64(report.environment.lastTransactionID))
            #expect(try runTool(storectlURL, ["inspect", path]).stdout.contains("a process writes the store through it"))
            #expect(try runTool(storectlURL, ["count", path, "--entity", "Message"]).stdout.contains("21"))
            store.close()

            let loaded = try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", file])
            #expect(loaded.status == 0, "\(loaded.stderr)")
            #expect(!FileManager.default.fileExists(atPath: path + "/commits.log"))
            #expect(try runTool(storectlURL, ["count", path, "--entity", "Message"]).stdout.contains("22"))
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)
            #expect(try runTool(storectlURL, ["inspect", path, "--format", "json"]).stdout.contains("commitLog") == false)
        }
    }

    /// Makes at `crashed` the files a machine crash can leave of a demo store of 20 messages
    /// written through its log, then given `commits` more one-message commits: LMDB's file as
    /// the opening checkpoint synced it (none of the later pages reached the disk), and the log
    /// with every later commit. With `earlierBoot`, the log's checkpoint says it was made before
    /// the machine last started; else the files are what the page cache holds, as a writer
    /// killed in this start of the machine leaves them.
    static func crashedStore(at crashed: String, in dir: String, commits: Int, earlierBoot: Bool) throws {
        let path = dir + "/written"
        try populatedDemoStore(at: path, seed: 5, messages: 20, contacts: 3).close()
        let store = try Store(path: path, entities: DemoFeed.entities, options: Self.options)
        let checkpointed = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        for id in 1...UInt64(commits) {
            try store.write { try $0.insert(Message(id: 10_000 + id, folder: 1, date: Date(timeIntervalSince1970: 1_800_000_000),
                                                    title: "after \(id)", isRead: false, contactId: 1)) }
        }
        let written = try Data(contentsOf: URL(fileURLWithPath: path + "/data.mdb"))
        let log = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path + "/" + CommitLog.fileName)))
        store.close()
        try FileManager.default.createDirectory(atPath: crashed, withIntermediateDirectories: true)
        chmod(crashed, 0o755)
        try (earlierBoot ? checkpointed : written).write(to: URL(fileURLWithPath: crashed + "/data.mdb"))
        try Data(earlierBoot ? CommitLogImage.madeBeforeRestart(log) : log).write(to: URL(fileURLWithPath: crashed + "/" + CommitLog.fileName))
        for file in ["data.mdb", CommitLog.fileName] { chmod(crashed + "/" + file, 0o644) }
    }

    static func messages(_ store: Store) throws -> Int { try store.read { try $0.count(Message.self) } }

    @Test func aReaderAfterAMachineCrashRecoversTheStoreFirst() throws {
        try withTemporaryDirectory { dir in
            let crashed = dir + "/crashed"
            try Self.crashedStore(at: crashed, in: dir, commits: 12, earlierBoot: true)
            #expect(try CommitLogKeeper.needsRecovery(path: crashed))
            // A handle that only reads makes the log's commits again, as a writer would.
            let reader = try Store(path: crashed, options: StoreOptions(readOnly: true))
            #expect(try Self.messages(reader) == 32)
            #expect(try reader.verify().isEmpty)
            reader.close()
            #expect(try !CommitLogKeeper.needsRecovery(path: crashed))
        }
    }

    @Test func aReaderAfterAWriterWasKilledReadsWithoutRecovering() throws {
        try withTemporaryDirectory { dir in
            let crashed = dir + "/crashed"
            try Self.crashedStore(at: crashed, in: dir, commits: 12, earlierBoot: false)
            let log = try Data(contentsOf: URL(fileURLWithPath: crashed + "/" + CommitLog.fileName))
            #expect(try !CommitLogKeeper.needsRecovery(path: crashed))
            let reader = try Store(path: crashed, options: StoreOptions(readOnly: true))
            #expect(try Self.messages(reader) == 32)
            reader.close()
            // Nothing was written: the log is as the writer left it.
            #expect(try Data(contentsOf: URL(fileURLWithPath: crashed + "/" + CommitLog.fileName)) == log)
        }
    }

    @Test func aUserWhoMayNotWriteIsToldTheStoreNeedsRecovery() throws {
        try withTemporaryDirectory { dir in
            chmod(dir, 0o755)
            let crashed = dir + "/crashed"
            try Self.crashedStore(at: crashed, in: dir, commits: 5, earlierBoot: true)
            let data = try Data(contentsOf: URL(fileURLWithPath: crashed + "/data.mdb"))
            let refused = try AccessTests.storectlAsOtherUser(["count", crashed, "--entity", "Message"], dir: dir)
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("must be recovered before it can be read"), "\(refused.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: crashed + "/data.mdb")) == data)
            // Its owner's storectl recovers it and reads every acknowledged commit.
            let counted = try runTool(storectlURL, ["count", crashed, "--entity", "Message"])
            #expect(counted.status == 0 && counted.stdout.contains("25"), "\(counted.stdout)\(counted.stderr)")
        }
    }
}
