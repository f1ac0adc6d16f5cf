@_spi(CommitLog) import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import Foundation
import Testing

/// A store one process writes through its commit log (`StoreOptions.keepsCommitLog`) is
/// read-only to every other process, which would otherwise write commits the log does not hold;
/// once that process has closed it, another writes it again and retires the log.
@Suite struct CommitLogProcessTests {
    @Test func anotherProcessMayOnlyReadAStoreWrittenThroughACommitLog() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            try populatedDemoStore(at: path, seed: 5, messages: 20, contacts: 3).close()
            var options = StoreOptions(durability: .full)
            options.keepsCommitLog = true
            let store = try Store(path: path, entities: DemoFeed.entities, options: options)
            let file = dir + "/one.jsonl"
            try #"{"contactId": 1, "date": "2026-01-01T09:30:00Z", "folder": 1, "id": 5000, "isRead": false, "title": "hello"}"#
                .appending("\n").write(toFile: file, atomically: true, encoding: .utf8)
            let refused = try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", file])
            #expect(refused.status != 0 && refused.stderr.contains("commit log"), "\(refused.stderr)")
            #expect(try runTool(storectlURL, ["count", path, "--entity", "Message"]).stdout.contains("20"))
            store.close()

            let loaded = try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", file])
            #expect(loaded.status == 0, "\(loaded.stderr)")
            #expect(!FileManager.default.fileExists(atPath: path + "/commits.log"))
            #expect(try runTool(storectlURL, ["count", path, "--entity", "Message"]).stdout.contains("21"))
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)
        }
    }
}
