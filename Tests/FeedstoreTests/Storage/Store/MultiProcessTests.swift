import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A child process (`storectl demo mutate`) writes while this process reads the same store
/// through its own open handle and sees every commit and journal entry.
@Suite(.blocking) struct MultiProcessTests {
    @Test func commitsOfAnotherProcessAreSeenWhileItWrites() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 11, messages: 2_000, contacts: 50)
            let start = try store.read { try $0.journalBounds().last }

            let child = Process()
            child.executableURL = storectlURL
            child.arguments = ["demo", "mutate", path, "--commits", "40", "--per-commit", "3", "--seed", "5", "--durability", "relaxed"]
            let output = Pipe()
            child.standardOutput = output
            try child.run()

            // Read while the child writes: the journal head advances under our open handle.
            var observed = Set<UInt64>()
            var entries = 0
            var cursor = start
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                let commits = try store.read { try $0.journal(after: cursor, limit: 100) }
                for commit in commits {
                    observed.insert(commit.sequence)
                    entries += commit.entries.count
                    cursor = commit.sequence
                }
                if !child.isRunning && commits.isEmpty { break }
                usleep(2_000)
            }
            child.waitUntilExit()
            #expect(child.terminationStatus == 0)
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { UInt64($0) } }
            #expect(printed.count > 20, "the child committed \(printed.count) times")
            #expect(Set(printed).isSubset(of: observed), "missing \(Set(printed).subtracting(observed))")
            #expect(entries >= printed.count)
            #expect(try store.read { try $0.journalBounds().last } == printed.last)
            #expect(try store.verify().isEmpty)
        }
    }

    /// Another process grows the map past this process's size (`MDB_MAP_RESIZED`); this
    /// process adopts the new size and keeps reading and writing.
    @Test func aMapGrownByAnotherProcessIsAdopted() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: DemoFeed.entities,
                                  options: StoreOptions(durability: .none, initialMapSize: 256 << 10))
            let before = try store.read { try $0.count(Message.self) }
            let result = try runTool(storectlURL, ["demo", "populate", path, "--messages", "30000", "--contacts", "10"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(before == 0)
            #expect(try store.read { try $0.count(Message.self) } == 30_000)
            try store.write { tx in try tx.delete(Message.self, id: 1) }
            #expect(try store.read { try $0.count(Message.self) } == 29_999)
        }
    }
}
