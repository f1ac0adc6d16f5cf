@_spi(Benchmarking) @testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A store that keeps a commit log (``StoreOptions/keepsCommitLog``): LMDB's file is synced only
/// at checkpoints, and after a crash the checkpoint and the log give back every acknowledged
/// commit. Crashes are simulated from the files: LMDB's file as the checkpoint left it, with any
/// subset of the pages written since over it (what a power loss may leave of unsynced writes),
/// and the log as synced, whole or with its last record torn.
@Suite(.blocking) struct CommitLogTests {
    static var options: StoreOptions {
        var options = StoreOptions(durability: .full)
        options.keepsCommitLog = true
        options.journalRetention = JournalRetention(minimumCommits: 40)
        // One LMDB transaction, one record, for each commit the tests make: no passes of the
        // idle writer in between.
        options.removesTrimmedKeysWhenIdle = false
        return options
    }

    /// Every record by id, and the journal's last commit.
    static func state(_ store: Store) throws -> (items: [Int64: [String: FieldValue]], last: UInt64) {
        try store.read { tx in
            let items = try tx.objects(in: Query(Item.self, index: "byName"))
            return (Dictionary(uniqueKeysWithValues: items.map { ($0.id, $0.fields) }), try tx.journalBounds().last)
        }
    }

    static func item(_ id: Int64, _ random: inout RandomValues) -> Item {
        Item(id: id, group: id % 5, score: Double(Int.random(in: -1_000...1_000, using: &random.rng)), name: "n\(id)-\(Int.random(in: 0..<1_000_000, using: &random.rng))",
             flag: Bool.random(using: &random.rng), tag: nil)
    }

    /// Random commits: puts, deletes, many rows at once, and group commits.
    static func write(_ store: Store, commits: Int, _ random: inout RandomValues, after each: (Store) throws -> Void = { _ in }) throws {
        for _ in 0..<commits {
            switch Int.random(in: 0..<3, using: &random.rng) {
            case 0:
                let values = (0..<Int.random(in: 1...40, using: &random.rng)).map { _ in item(Int64.random(in: 0..<600, using: &random.rng), &random) }
                try store.write { tx in for value in values { try tx.put(value) } }
            case 1:
                let id = Int64.random(in: 0..<600, using: &random.rng)
                try store.write { tx in _ = try tx.delete(Item.self, id: id) }
            default:
                let values = (0..<Int.random(in: 2...10, using: &random.rng)).map { _ in item(Int64.random(in: 0..<600, using: &random.rng), &random) }
                for outcome in try store.writeEach(values.map { value in { tx in try tx.put(value) } }) { try outcome.get() }
            }
            try each(store)
        }
    }

    @Test func aStoreWithACommitLogReopensWithEveryCommit() throws {
        try withTemporaryDirectory { dir in
            var random = RandomValues(seed: 7)
            var store = try Store(path: dir + "/s", entities: [Item.self], options: Self.options)
            try Self.write(store, commits: 60, &random)
            let before = try Self.state(store)
            store.close()
            #expect(FileManager.default.fileExists(atPath: dir + "/s/" + CommitLog.fileName))
            store = try Store(path: dir + "/s", entities: [Item.self], options: Self.options)
            defer { store.close() }
            let after = try Self.state(store)
            #expect(after.items == before.items && after.last == before.last)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test(arguments: testSeeds(4)) func aCrashLosesNoAcknowledgedCommit(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            var random = RandomValues(seed: seed)
            let store = try Store(path: dir + "/s", entities: [Item.self], options: Self.options)
            // Opening checkpointed: the file now is what the disk holds for sure.
            let checkpointed = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/s/data.mdb")))
            var states = [try Self.state(store)]
            try Self.write(store, commits: 50, &random) { states.append(try Self.state($0)) }
            // The files as the page cache holds them, the store still open (a crash, not a close).
            let written = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/s/data.mdb")))
            let log = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/s/" + CommitLog.fileName)))
            let lastRecord = try Self.lastRecordStart(log)
            store.close()

            for trial in 0..<6 {
                // Any subset of the pages written since the checkpoint reached the disk.
                let share = [0.0, 1.0, 0.5, 0.1, 0.9, 0.3][trial]
                var disk = checkpointed
                let pageSize = 4_096
                for page in 0..<(written.count / pageSize) where Double.random(in: 0..<1, using: &random.rng) < share {
                    let range = (page * pageSize)..<((page + 1) * pageSize)
                    if range.upperBound > disk.count { disk += [UInt8](repeating: 0, count: range.upperBound - disk.count) }
                    disk.replaceSubrange(range, with: written[range])
                }
                // Odd trials tear the log's last record: its commit was never acknowledged. The
                // machine starts again after the crash.
                let torn = trial % 2 == 1
                let crashed = dir + "/crash\(trial)"
                try FileManager.default.createDirectory(atPath: crashed, withIntermediateDirectories: true)
                try Data(disk).write(to: URL(fileURLWithPath: crashed + "/data.mdb"))
                let image = torn ? Array(log[..<(lastRecord + 30)]) + [UInt8](repeating: 0, count: log.count - lastRecord - 30) : log
                try Data(CommitLogImage.madeBeforeRestart(image)).write(to: URL(fileURLWithPath: crashed + "/" + CommitLog.fileName))
                let recovered = try Store(path: crashed, entities: [Item.self], options: Self.options)
                let state = try Self.state(recovered)
                let expected = states[states.count - (torn ? 2 : 1)]
                #expect(state.items == expected.items, "seed \(seed), trial \(trial)")
                #expect(state.last == expected.last, "seed \(seed), trial \(trial): \(state.last) against \(expected.last)")
                #expect(try recovered.verify().isEmpty, "seed \(seed), trial \(trial)")
                // It goes on: a write, then the same after a clean reopen.
                try recovered.write { tx in try tx.put(Item(id: 9_999, group: 1, score: 1, name: "after", flag: true, tag: nil)) }
                recovered.close()
                let reopened = try Store(path: crashed, entities: [Item.self], options: Self.options)
                #expect(try Self.state(reopened).items[9_999] != nil)
                #expect(try reopened.verify().isEmpty)
                reopened.close()
            }
        }
    }

    /// The map grows under a store that keeps a log: the pin is let go for the growth and taken
    /// again with a checkpoint, and a crash after it still finds every acknowledged commit.
    @Test func theMapGrowsUnderACommitLog() throws {
        try withTemporaryDirectory { dir in
            var random = RandomValues(seed: 11)
            var options = Self.options
            options.initialMapSize = 256 << 10
            let store = try Store(path: dir + "/s", entities: [Item.self], options: options)
            let mapBefore = try store.core.environment.info().mapSize
            var states = [try Self.state(store)]
            try Self.write(store, commits: 120, &random) { states.append(try Self.state($0)) }
            #expect(try store.core.environment.info().mapSize > mapBefore)
            let written = try Data(contentsOf: URL(fileURLWithPath: dir + "/s/data.mdb"))
            let log = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/s/" + CommitLog.fileName)))
            let lastRecord = try Self.lastRecordStart(log)
            store.close()
            // Every page reached the disk; the last record was torn.
            try FileManager.default.createDirectory(atPath: dir + "/crash", withIntermediateDirectories: true)
            try written.write(to: URL(fileURLWithPath: dir + "/crash/data.mdb"))
            try Data(CommitLogImage.madeBeforeRestart(Array(log[..<(lastRecord + 30)]) + [UInt8](repeating: 0, count: log.count - lastRecord - 30)))
                .write(to: URL(fileURLWithPath: dir + "/crash/" + CommitLog.fileName))
            let recovered = try Store(path: dir + "/crash", entities: [Item.self], options: options)
            defer { recovered.close() }
            let state = try Self.state(recovered)
            #expect(state.items == states[states.count - 2].items && state.last == states[states.count - 2].last)
            #expect(try recovered.verify().isEmpty)
        }
    }

    /// When the checkpoint after a map growth fails, the pin it let go stays let go: the next
    /// write checkpoints first, so that no commit writes over the pages a recovery puts back.
    @Test func aWriteAfterThePinWasLetGoCheckpointsFirst() throws {
        try withTemporaryDirectory { dir in
            var random = RandomValues(seed: 13)
            let store = try Store(path: dir + "/s", entities: [Item.self], options: Self.options)
            defer { store.close() }
            try Self.write(store, commits: 10, &random)
            let keeper = try #require(store.core.commitLog)
            let checkpointBefore = try #require(try store.inspect().commitLog?.checkpointTransaction)
            let newest = UInt64(try store.core.environment.info().lastTransactionID)
            #expect(checkpointBefore < newest)
            // What a growth whose checkpoint failed leaves: the map grown, no pin.
            try store.core.mapLock.withExclusive { keeper.releasePin() }
            try Self.write(store, commits: 1, &random)
            #expect(try store.inspect().commitLog?.checkpointTransaction == newest)
            #expect(try store.verify().isEmpty)
        }
    }

    /// Between checkpoints LMDB uses no page freed since the last one; a checkpoint once the
    /// commits since it have written a bounded amount of pages lets it use them again, so the
    /// data file stops growing while the store does not.
    @Test func commitsWriteABoundedAmountOfPagesBetweenCheckpoints() throws {
        try withTemporaryDirectory { dir in
            var random = RandomValues(seed: 12)
            var options = Self.options
            // A map that never grows here, so that no map growth checkpoints.
            options.initialMapSize = 256 << 20
            options.commitLogCheckpointPages = 2 << 20
            let store = try Store(path: dir + "/s", entities: [Item.self], options: options)
            defer { store.close() }
            try store.write { tx in for id in 0..<600 { try tx.put(Self.item(Int64(id), &random)) } }
            let checkpoint = try CommitLogKeeper.inspection(path: dir + "/s")!.checkpointTransaction
            func lastPage() throws -> Int { try store.core.environment.info().lastPageNumber }
            let before = try lastPage()
            // One-row updates of a store of constant size: about ten pages written each.
            for _ in 0..<1_500 {
                let value = Self.item(Int64.random(in: 0..<600, using: &random.rng), &random)
                try store.write { tx in try tx.put(value) }
            }
            #expect(try CommitLogKeeper.inspection(path: dir + "/s")!.checkpointTransaction > checkpoint)
            // Without the bound the file grows by every page written (about 60 MiB here).
            let grown = (try lastPage() - before) * store.core.environment.pageSize
            #expect(grown <= 3 * options.commitLogCheckpointPages, "grew by \(grown) bytes")
            #expect(try store.verify().isEmpty)
        }
    }

    /// A store opened without the log after one kept it recovers from the log, then removes it:
    /// commits made without it are never rolled back by an old checkpoint when the log is kept
    /// again.
    @Test func aWriterWithoutTheLogRetiresIt() throws {
        try withTemporaryDirectory { dir in
            var random = RandomValues(seed: 3)
            var store = try Store(path: dir + "/s", entities: [Item.self], options: Self.options)
            try Self.write(store, commits: 20, &random)
            store.close()
            var plain = Self.options
            plain.keepsCommitLog = false
            store = try Store(path: dir + "/s", entities: [Item.self], options: plain)
            #expect(!FileManager.default.fileExists(atPath: dir + "/s/" + CommitLog.fileName))
            try Self.write(store, commits: 20, &random)
            let before = try Self.state(store)
            store.close()
            store = try Store(path: dir + "/s", entities: [Item.self], options: Self.options)
            defer { store.close() }
            let after = try Self.state(store)
            #expect(after.items == before.items && after.last == before.last)
            #expect(try store.verify().isEmpty)
        }
    }

    /// A child process holds a copy of the parent's descriptors from its fork until its exec
    /// closes them, and with them the log's lock. A store closed and opened again while another
    /// thread starts processes is still written by this process, not opened read-only.
    @Test func aStoreReopenedWhileTheProcessStartsChildrenStaysWritable() throws {
        try withTemporaryDirectory { dir in
            let spawning = Protected(true)
            for _ in 0..<2 {
                Thread {
                    while spawning.current {
                        let child = Process()
                        child.executableURL = URL(fileURLWithPath: "/bin/true")
                        try? child.run()
                        child.waitUntilExit()
                    }
                }.start()
            }
            defer { spawning.withLock { $0 = false } }
            var random = RandomValues(seed: 11)
            for round in 0..<300 {
                let store = try Store(path: dir + "/s", entities: [Item.self], options: Self.options)
                defer { store.close() }
                #expect(store.readOnlyReason == nil, "opening \(round): \(store.readOnlyReason ?? "")")
                if store.isReadOnly { break }
                try store.write { tx in try tx.put(Self.item(Int64(round), &random)) }
            }
        }
    }

    /// Where the log's last record starts (its records follow one another from the data start).
    static func lastRecordStart(_ log: [UInt8]) throws -> Int {
        func word32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(log[at + $1]) << (8 * $1) } }
        func word64(_ at: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(log[at + $1]) << (8 * UInt64($1)) } }
        var at = CommitLog.dataStart, last = -1
        let epoch = word64(at + 8)
        while at + CommitLog.recordHeaderSize <= log.count, word64(at + 8) == epoch, epoch != 0 {
            last = at
            at += CommitLog.recordHeaderSize + word32(at)
        }
        guard last >= 0 else { throw FeedstoreError.corruptData(what: "a commit log", reason: "it holds no record") }
        return last
    }
}
