@_spi(Replication) import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// Snapshots in a JetStream Object Store bucket, against a real `nats-server -js`: a replica
/// starts from nothing and ends equal to its primary, a restore cut short starts over, and a
/// replica the stream left behind re-seeds when asked.
@Suite(.serialized, .blocking) struct SnapshotTests {
    static let stream = ShipperTests.stream

    /// The digest matches FIPS 180-4's examples, fed whole or in uneven pieces.
    @Test func sha256MatchesTheStandardsVectors() {
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        func digest(_ bytes: [UInt8], pieces: Int = 1) -> String {
            let hash = SHA256()
            let size = max(1, bytes.count / pieces)
            var start = 0
            while start < bytes.count {
                hash.update(bytes[start..<min(bytes.count, start + size)])
                start += size
            }
            return hex(hash.finish())
        }
        #expect(digest([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(digest(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let twoBlocks = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(digest(twoBlocks) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let million = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        for pieces in [1, 3, 7, 1_000] {
            #expect(digest(million, pieces: pieces) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", "\(pieces) pieces")
        }
    }

    /// A primary whose history predates shipping: commits made before the shipper, which the
    /// stream never holds.
    static func primaryWithHistory(in dir: String, commits: Int, rng: inout SeededGenerator)
        throws -> (server: NATSServer, connection: JetStreamConnection, primary: Store)
    {
        let server = try NATSServer(directory: dir)
        let primary = try ShipperTests.openStore(dir + "/primary")
        try ShipperTests.commit(primary, commits, rng: &rng)
        return (server, JetStreamConnection(url: server.url), primary)
    }

    /// The first snapshot, taken when shipping starts, covers the history from before shipping:
    /// a follower into a missing directory restores it and ends equal to the primary.
    @Test(arguments: testSeeds(1, base: 41))
    func aReplicaFromNothingEndsEqualToAPrimaryWithOlderHistory(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let (server, connection, primary) = try Self.primaryWithHistory(in: dir, commits: 200, rng: &rng)
            defer { server.stop() }
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            try ShipperTests.commit(primary, 50, rng: &rng)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let snapshots = try SnapshotBucket(connection: connection, name: SnapshotBucket.defaultName(forStream: Self.stream)).snapshots()
            #expect(snapshots.count == 1 && snapshots[0].commit >= 200 && snapshots[0].name == "commit-\(snapshots[0].commit)", "\(snapshots)")
            let primaryID = try primary.read { try $0.storeIdentifier() }
            #expect(snapshots.first?.store == primaryID)

            final class Events: @unchecked Sendable { var events: [ReplicaFollower.SeedEvent] = [] }
            let seen = Events()
            // No durability asked: a snapshot can re-seed the replica, so its commits go unsynced.
            let follower = try ReplicaFollower(path: dir + "/replica/new", connection: connection, stream: Self.stream,
                                               onSeed: { seen.events.append($0) })
            defer { follower.replica.close() }
            #expect(follower.durability == .none)
            #expect(FileManager.default.fileExists(atPath: dir + "/replica/new/" + ReplicaFollower.unsyncedMarker))
            guard case .restoring(let restoring)? = seen.events.first, case .restored? = seen.events.last else {
                Issue.record("seed events: \(seen.events)")
                return
            }
            #expect(restoring == snapshots.last)
            #expect(seen.events.contains { if case let .fetched(done, total) = $0 { return done == total } else { return false } })
            try ShipperTests.commit(primary, 30, rng: &rng)
            let last = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: last)
            try follower.run(untilOriginSequence: last)
            try FollowerTests.expectReplicaEqualsPrimary(primary, follower.replica, "seed \(seed)")
            // The replica is a store of its own: another identifier, none of the primary's cursors.
            #expect(try follower.replica.read { try $0.storeIdentifier() } != primaryID)
            #expect(try follower.replica.read { try $0.journalCursors() }.isEmpty)
            #expect(FileManager.default.fileExists(atPath: dir + "/replica/new/restore.partial") == false)
        }
    }

    /// A restore cut short leaves its partial file, never a `data.mdb`: the next follower starts
    /// over and ends equal. A damaged object is refused by its digest.
    @Test func aRestoreCutShortStartsOverAndADamagedOneIsRefused() throws {
        var rng = SeededGenerator(seed: 7)
        try withTemporaryDirectory { dir in
            let (server, connection, primary) = try Self.primaryWithHistory(in: dir, commits: 100, rng: &rng)
            defer { server.stop() }
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            // What a killed restore leaves: the directory, its lock file, half a file.
            let replicaPath = dir + "/replica"
            try FileManager.default.createDirectory(atPath: replicaPath + "/restore.partial", withIntermediateDirectories: true)
            FileManager.default.createFile(atPath: replicaPath + "/follower.lock", contents: nil)
            FileManager.default.createFile(atPath: replicaPath + "/restore.partial/data.mdb", contents: Data(repeating: 7, count: 5_000))
            #expect(throws: (any Error).self) { try Store(path: replicaPath, options: StoreOptions(readOnly: true)) }
            let follower = try ReplicaFollower(path: replicaPath, connection: connection, stream: Self.stream, durability: .none)
            try follower.run(untilOriginSequence: try primary.read { try $0.journalBounds().last })
            try FollowerTests.expectReplicaEqualsPrimary(primary, follower.replica, "after a restore cut short")
            follower.replica.close()

            // A chunk whose bytes changed: the digest no longer matches.
            let raw = try NATSConnection(connection)
            let bucket = try ObjectStoreBucket(connection: raw, name: SnapshotBucket.defaultName(forStream: Self.stream), create: false)
            var info = try #require(try bucket.list().first)
            info.digest = "SHA-256=" + ObjectStoreBucket.base64URL([UInt8](repeating: 0, count: 32))
            let meta = "$O.\(bucket.name).M.\(ObjectStoreBucket.base64URL(Array(info.name.utf8)))"
            try raw.publish(subject: meta, data: Array(try JSONEncoder().encode(info)), headers: ["Nats-Rollup": "sub"])
            #expect(throws: JetStreamError.self) {
                _ = try ReplicaFollower(path: dir + "/other", connection: connection, stream: Self.stream, durability: .none)
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/other/data.mdb"))
            // A directory holding other files is never made a replica.
            try FileManager.default.createDirectory(atPath: dir + "/documents", withIntermediateDirectories: false)
            FileManager.default.createFile(atPath: dir + "/documents/notes.txt", contents: Data("mine".utf8))
            #expect { _ = try ReplicaFollower(path: dir + "/documents", connection: connection, stream: Self.stream) } throws: { error in
                guard case let FeedstoreError.notAStore(_, reason) = error else { return false }
                return reason.contains("notes.txt")
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/documents/data.mdb"))
        }
    }

    /// A follower stopped while the stream dropped the commits it needs next: without
    /// `reseed` that is a typed error naming the way out; with it, the replica is replaced by the
    /// newest snapshot and ends equal, once no other process has it open.
    @Test func aFollowerLeftBehindReseedsWhenAsked() throws {
        var rng = SeededGenerator(seed: 8)
        try withTemporaryDirectory { dir in
            let (server, connection, primary) = try Self.primaryWithHistory(in: dir, commits: 40, rng: &rng)
            defer { server.stop() }
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream,
                                             snapshots: SnapshotSchedule(everyCommits: 50))
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let replicaPath = dir + "/replica"
            try {
                let follower = try ReplicaFollower(path: replicaPath, connection: connection, stream: Self.stream, durability: .none)
                defer { follower.replica.close() }
                try follower.run(untilOriginSequence: try primary.read { try $0.journalBounds().last })
            }()
            try ShipperTests.commit(primary, 120, rng: &rng)
            let last = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: last)
            // The stream's limits drop all but its last 10 messages.
            let raw = try NATSConnection(connection)
            let info = try #require(try raw.streamInfo(Self.stream))
            try raw.purge(Self.stream, before: info.lastSequence - 9)
            #expect(try raw.streamInfo(Self.stream)?.firstSequence == info.lastSequence - 9)
            do {
                _ = try ReplicaFollower(path: replicaPath, connection: connection, stream: Self.stream, durability: .none)
                Issue.record("a follower the stream left behind started")
            } catch let error as JetStreamError {
                #expect(error.needsSeed && error.description.contains("--reseed"), "\(error)")
            }
            // Not while another process reads the replica: it would keep reading the replaced file.
            let reader = try RunningTool(storectlURL, ["watch", replicaPath, "--entity", "Item", "--index", "byName"])
            #expect(reader.waitForOutput(timeout: 30), "storectl watch printed nothing")
            do {
                _ = try ReplicaFollower(path: replicaPath, connection: connection, stream: Self.stream, durability: .none, reseed: true)
                Issue.record("a replica another process has open was replaced")
            } catch let error as JetStreamError {
                #expect(error.needsSeed && error.description.contains("another process has the store open"), "\(error)")
            }
            reader.interrupt()
            _ = reader.finish(timeout: 10)
            let follower = try ReplicaFollower(path: replicaPath, connection: connection, stream: Self.stream, durability: .none, reseed: true)
            defer { follower.replica.close() }
            try follower.run(untilOriginSequence: last)
            try FollowerTests.expectReplicaEqualsPrimary(primary, follower.replica, "after re-seeding")
        }
    }

    /// A replica written without syncs is marked so while its follower runs: a follower killed
    /// (the mark from this boot) continues it, and one that finds the mark from an earlier boot
    /// (the machine went down meanwhile) re-seeds it from the newest snapshot.
    @Test func aReplicaWrittenWithoutSyncsIsReseededAfterTheMachineWentDown() throws {
        var rng = SeededGenerator(seed: 12)
        try withTemporaryDirectory { dir in
            let (server, connection, primary) = try Self.primaryWithHistory(in: dir, commits: 60, rng: &rng)
            defer { server.stop() }
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            try ShipperTests.commit(primary, 20, rng: &rng)
            let last = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: last)
            let path = dir + "/replica", marker = dir + "/replica/" + ReplicaFollower.unsyncedMarker
            final class Events: @unchecked Sendable { var restored = 0 }
            let events = Events()
            func follow() throws {
                let follower = try ReplicaFollower(path: path, connection: connection, stream: Self.stream, durability: .none,
                                                   onSeed: { if case .restored = $0 { events.restored += 1 } })
                #expect(FileManager.default.fileExists(atPath: marker))
                try follower.run(untilOriginSequence: last)
                try FollowerTests.expectReplicaEqualsPrimary(primary, follower.replica, "restored \(events.restored)")
            }
            try follow()
            #expect(events.restored == 1)
            // A follower that ends syncs the replica and removes the mark.
            #expect(!FileManager.default.fileExists(atPath: marker))
            // Killed: the mark of this boot stays; the page cache kept every write.
            try "boot:\(MachineBoot.text)\n".write(toFile: marker, atomically: true, encoding: .utf8)
            try follow()
            #expect(events.restored == 1)
            // The machine went down while the replica was written without syncs.
            try "boot:\(String(repeating: "0", count: 32))\n".write(toFile: marker, atomically: true, encoding: .utf8)
            try follow()
            #expect(events.restored == 2)
            // Marks of earlier versions name when the machine started.
            let started = Date().timeIntervalSince1970 - ProcessInfo.processInfo.systemUptime
            try String(format: "%.0f\n", started).write(toFile: marker, atomically: true, encoding: .utf8)
            try follow()
            #expect(events.restored == 2)
            try String(format: "%.0f\n", started - 3_600).write(toFile: marker, atomically: true, encoding: .utf8)
            try follow()
            #expect(events.restored == 3)
        }
    }

    /// A relaxed replica syncs each commit right after its watchers see it, so a power loss can
    /// damage only its newest commit. Its mark names the transaction it started from: a
    /// follower merely killed continues; one that finds the mark from an earlier boot rolls the
    /// newest commit back (here damaged: its meta page points at a page past the file's end)
    /// and applies it again from the stream, without a re-seed.
    @Test func aRelaxedReplicaRollsBackItsNewestCommitAfterTheMachineWentDown() throws {
        var rng = SeededGenerator(seed: 13)
        try withTemporaryDirectory { dir in
            let (server, connection, primary) = try Self.primaryWithHistory(in: dir, commits: 60, rng: &rng)
            defer { server.stop() }
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let path = dir + "/replica", marker = path + "/" + ReplicaFollower.unsyncedMarker
            final class Events: @unchecked Sendable { var restored = 0 }
            let events = Events()
            /// Follows through the primary's last commit; returns where the replica began.
            func follow() throws -> UInt64 {
                let follower = try ReplicaFollower(path: path, connection: connection, stream: Self.stream, durability: .relaxed,
                                                   onSeed: { if case .restored = $0 { events.restored += 1 } })
                let began = follower.state?.originSequence ?? 0
                guard case let .syncedAfterPublishing(after)? = ReplicaFollower.mark(at: path)?.writing else {
                    Issue.record("the relaxed replica's mark: \(String(describing: ReplicaFollower.mark(at: path)))")
                    return began
                }
                #expect(after == (try Store.newestTransaction(at: path)), "the mark names the transaction the follower began from")
                let last = try primary.read { try $0.journalBounds().last }
                try follower.run(untilOriginSequence: last)
                try FollowerTests.expectReplicaEqualsPrimary(primary, follower.replica, "began at \(began)")
                #expect(try follower.replica.verify().isEmpty)
                return began
            }
            _ = try follow()
            #expect(events.restored == 1)
            #expect(!FileManager.default.fileExists(atPath: marker), "a follower that ends syncs the replica and removes the mark")
            // Commits the next follower applies one group at a time.
            for _ in 0..<5 {
                try ShipperTests.commit(primary, 1, rng: &rng)
                try shipper.run(until: try primary.read { try $0.journalBounds().last })
                _ = try follow()
            }
            let before = try Store.newestTransaction(at: path)
            // Killed: the mark of this boot stays, and nothing is rolled back.
            try ReplicaFollower.Mark(writing: .syncedAfterPublishing(after: before - 1)).text.write(toFile: marker, atomically: true, encoding: .utf8)
            let applied = try primary.read { try $0.journalBounds().last }
            #expect(try follow() == applied)
            #expect(try Store.newestTransaction(at: path) == before)
            // The machine went down, and the newest commit's pages were lost.
            try ShipperTests.commit(primary, 1, rng: &rng)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let file = open(path + "/data.mdb", O_RDWR)
            try #require(file >= 0)
            let pageSize = 4_096
            var ids = [UInt64](repeating: 0, count: 2)
            for page in 0..<2 { _ = pread(file, &ids[page], 8, off_t(page * pageSize + 144)) }
            var nowhere = UInt64.max >> 8
            _ = pwrite(file, &nowhere, 8, off_t((ids[0] > ids[1] ? 0 : pageSize) + 128))
            close(file)
            #expect(throws: FeedstoreError.self) { _ = try Store(path: path, options: StoreOptions(readOnly: true)).close() }
            try ReplicaFollower.Mark(boot: .identity(String(repeating: "0", count: 32)), writing: .syncedAfterPublishing(after: before - 1))
                .text.write(toFile: marker, atomically: true, encoding: .utf8)
            let began = try follow()
            #expect(began == applied - 1, "the newest commit (\(applied)) was rolled back")
            #expect(events.restored == 1, "no re-seed")
        }
    }

    /// Snapshots taken while a writer commits each restore to a store equal to the primary
    /// as of their commit, and the bucket keeps the newest `keep`.
    @Test func snapshotsUnderAWriterRestoreToThePrimaryAtTheirCommit() throws {
        var rng = SeededGenerator(seed: 9)
        try withTemporaryDirectory { dir in
            let (server, connection, primary) = try Self.primaryWithHistory(in: dir, commits: 50, rng: &rng)
            defer { server.stop() }
            _ = try primary.journalCursor(named: "keep everything", start: .oldest)
            let imagesFrom = try primary.write { try $0.keepRecordImagesInJournal() }
            // Records as of each commit, replayed from the journal's images.
            var model: [String: [FieldValue: [String: FieldValue]]] = [:]
            for entity in ["Item", "Note", "Event"] {
                for row in try primary.read({ try $0.entries(entity: entity, index: nil) }) { model[entity, default: [:]][row.id] = row.record }
            }
            let bucket = try SnapshotBucket(connection: connection, name: "under-writer", create: true)
            let writing = Locked(true)
            let writer = Thread {
                var rng = SeededGenerator(seed: 10)
                while writing.current { try? ShipperTests.commit(primary, 1, rng: &rng) }
            }
            writer.start()
            var taken: [Snapshot] = []
            for _ in 0..<3 {
                // Each snapshot at a later commit than the one before: on a loaded machine the
                // writer's thread may not have run between two of them.
                if let last = taken.last?.commit {
                    while try primary.read({ try $0.journalBounds().last }) <= last { usleep(1_000) }
                }
                taken.append(try bucket.publish(from: primary, keep: 2))
            }
            writing.withLock { $0 = false }
            while !writer.isFinished { Thread.sleep(forTimeInterval: 0.01) }
            #expect(try bucket.snapshots() == Array(taken.suffix(2)))
            for snapshot in taken.suffix(2) {
                let path = dir + "/restored-\(snapshot.commit)"
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                try bucket.restore(snapshot, into: path)
                let restored = try Store(path: path, options: StoreOptions(readOnly: true))
                defer { restored.close() }
                #expect(try restored.read { try $0.journalBounds().last } == snapshot.commit)
                // Replaying the primary's journal after the snapshot's commit gives the primary:
                // here, the records as of the commit equal the primary's journal folded to it.
                #expect(try restored.verify().isEmpty)
                let commits = try primary.read { try $0.journal(after: imagesFrom - 1, limit: Int(snapshot.commit)) }
                    .filter { $0.sequence <= snapshot.commit }
                var state = model
                for commit in commits { for entry in commit.entries { state[entry.entity, default: [:]][entry.id] = entry.record } }
                for (entity, records) in state {
                    let rows = try restored.read { try $0.entries(entity: entity, index: nil) }
                    #expect(Dictionary(uniqueKeysWithValues: rows.map { ($0.id, $0.record) }) == records.compactMapValues { $0 },
                            "\(entity) at commit \(snapshot.commit)")
                }
            }
        }
    }
}
