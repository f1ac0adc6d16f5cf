import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// An entity whose values JSON cannot carry exactly: dates with sub-millisecond parts, bytes,
/// UUID keys, and a nested value holding dates and UUIDs (which no catalog describes).
struct Event: Entity, Equatable {
    struct Detail: Codable, Equatable {
        var seen: Date
        var tags: [UUID]
        var count: UInt64
    }

    var id: UUID
    var at: Date
    var payload: Data
    var detail: Detail?

    static let indexes: [IndexDefinition] = [IndexDefinition("byAt", [.descending("at")])]
}

/// The shipper against a real `nats-server -js` on loopback: every commit reaches the stream
/// once, in order, as the envelope of the journal's commit; restarts of either side leave no gap
/// and no duplicate; a second shipper is refused.
@Suite(.serialized, .blocking) struct ShipperTests {
    static let stream = "ITEMS"

    /// A store of the entities these tests write, written without syncs (what is tested here is
    /// shipping, not durability).
    static func openStore(_ path: String) throws -> Store {
        try Store(path: path, entities: [Item.self, Note.self, Event.self], options: StoreOptions(durability: .none))
    }

    /// A real server, a primary store of these tests' entities and its shipper (which makes the
    /// journal keep records from the next commit on, and takes no snapshots). `keepingJournal` adds a cursor that reads
    /// nothing, so that retention keeps every commit to compare with.
    static func startPrimary(in dir: String, keepingJournal: Bool = false)
        throws -> (server: NATSServer, connection: JetStreamConnection, primary: Store, shipper: JournalShipper)
    {
        let server = try NATSServer(directory: dir)
        let connection = JetStreamConnection(url: server.url)
        let primary = try openStore(dir + "/primary")
        if keepingJournal { _ = try primary.journalCursor(named: "test", start: .oldest) }
        // No snapshots: replicas of these tests start empty and follow the stream from commit 1.
        return (server, connection, primary, try JournalShipper(store: primary, connection: connection, stream: stream, snapshots: nil))
    }

    /// Seeded mixed commits: inserts, updates and deletes of `Item`s and `Note`s, one to five
    /// changes each.
    /// The async forms ship and follow to a sequence, and run until their task is cancelled,
    /// then return within a round.
    @Test func asyncFormsRunUntilTheirTaskIsCancelled() async throws {
        try await withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try Self.startPrimary(in: dir)
            _ = server
            var rng = SeededGenerator(seed: 9)
            try Self.commit(primary, 20, rng: &rng)
            let first = try await primary.read { try $0.journalBounds().last }
            try await shipper.ship(until: first)
            #expect(shipper.shippedSequence == first)
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream)
            try await follower.follow(untilOriginSequence: first)
            #expect(follower.state?.originSequence == first)

            // Without a sequence, each runs until cancelled; meanwhile the commits flow through.
            nonisolated(unsafe) let (runningShipper, runningFollower) = (shipper, follower)
            let shipping = Task { try await runningShipper.ship() }
            let following = Task { try await runningFollower.follow() }
            try Self.commit(primary, 10, rng: &rng)
            let last = try await primary.read { try $0.journalBounds().last }
            let deadline = Date().addingTimeInterval(20)
            while (runningFollower.state?.originSequence ?? 0) < last && Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(runningFollower.state?.originSequence == last)
            let cancelled = Date()
            shipping.cancel()
            following.cancel()
            try await shipping.value
            try await following.value
            // Uncancelled, both would run forever. They stop within a round; the bound is wide
            // because resuming this task waits for Swift concurrency's shared threads, which long
            // synchronous tests beside it may hold.
            #expect(Date().timeIntervalSince(cancelled) < 120, "both stop once cancelled")
            follower.replica.close()
        }
    }

    /// `storectl ship` says what it published, or why nothing: commits made before the store's
    /// first shipper are named at once, with the way to seed replicas.
    @Test func shipSaysWhatItPublished() throws {
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let path = dir + "/primary"
            var rng = SeededGenerator(seed: 3)
            let store = try Self.openStore(path)
            try Self.commit(store, 5, rng: &rng)
            let before = try store.read { try $0.journalBounds().last }
            try store.sync()
            func ship(until sequence: UInt64) throws -> (status: Int32, stdout: String, stderr: String) {
                try runTool(storectlURL, ["ship", path, "--nats", server.url, "--stream", Self.stream, "--until-sequence", String(sequence)], timeout: 60)
            }
            let first = try ship(until: before)
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.hasPrefix("nothing to publish: no commit was made since shipping began; commits 1–\(before) predate"), "\(first.stdout)")
            #expect(first.stderr.contains("replicas get them from the snapshot taken now"), "\(first.stderr)")
            try Self.commit(store, 3, rng: &rng)
            let last = try store.read { try $0.journalBounds().last }
            try store.sync()
            let second = try ship(until: last)
            #expect(second.stdout == "shipped commits \(before + 1)–\(last) (\(last - before) commits) to stream \(Self.stream)\n", "\(second.stdout)")
            let third = try ship(until: last)
            #expect(third.stdout == "nothing to publish: stream \(Self.stream) already holds every commit through \(last)\n", "\(third.stdout)")
            store.close()
        }
    }

    static func commit(_ store: Store, _ count: Int, rng: inout SeededGenerator) throws {
        for _ in 0..<count {
            try store.write { tx in
                for _ in 0..<Int.random(in: 1...5, using: &rng) {
                    let id = Int64.random(in: 1...200, using: &rng)
                    switch Int.random(in: 0..<8, using: &rng) {
                    case 0: try tx.delete(Item.self, id: id)
                    case 6:
                        let at = Date(timeIntervalSinceReferenceDate: Double.random(in: 0..<1e9, using: &rng))
                        let detail = Event.Detail(seen: at.addingTimeInterval(Double.random(in: 0..<1, using: &rng)),
                                                  tags: [UUID(), UUID()], count: UInt64.random(in: 0...UInt64.max, using: &rng))
                        try tx.put(Event(id: UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", id % 30))!, at: at,
                                         payload: Data((0..<Int(id % 9)).map { UInt8($0) }), detail: id % 2 == 0 ? detail : nil))
                    case 7: try tx.delete(Event.self, id: UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", id % 30))!)
                    case 1: try tx.put(Note(id: "n\(id % 20)", body: String(repeating: "b", count: Int(id % 7)), priority: Int8(id % 5),
                                            when: Date(timeIntervalSince1970: Double(id) * 1_000), labels: ["x\(id % 3)"]))
                    default:
                        try tx.put(Item(id: id, group: id % 4 == 0 ? nil : id % 3, score: Double.random(in: 0..<100, using: &rng),
                                        name: "item \(id)", flag: Bool.random(using: &rng), tag: id % 9 == 0 ? UUID() : nil))
                    }
                }
            }
        }
    }

    /// The stream's messages, in order: their ids and data.
    static func streamMessages(_ server: NATSServer) throws -> [StreamMessage] {
        let connection = try NATSConnection(JetStreamConnection(url: server.url))
        guard let info = try connection.streamInfo(stream) else { return [] }
        return try (max(info.firstSequence, 1)...max(info.lastSequence, 1)).compactMap { try connection.message(stream, at: $0) }
    }

    /// The stream holds exactly the store's commits from `start` on, each once, in order, each
    /// the envelope of that commit.
    static func expectStreamHoldsJournal(_ server: NATSServer, store: Store, from start: UInt64, seed: UInt64) throws {
        let identifier = try #require(try store.read { try $0.storeIdentifier() })
        let bounds = try store.read { try $0.journalBounds() }
        let commits = try store.read { try $0.journal(after: start - 1, limit: Int(bounds.last - start) + 1) }
        let messages = try streamMessages(server)
        #expect(!commits.isEmpty)
        #expect(messages.count == commits.count, "seed \(seed)")
        #expect(messages.map(\.streamSequence) == Array(1...UInt64(max(messages.count, 1))).prefix(messages.count).map { $0 })
        var described: Set<String> = []
        for (message, commit) in zip(messages, commits) {
            #expect(message.id == ChangeEnvelope.messageID(store: identifier, sequence: commit.sequence), "seed \(seed)")
            let received = try ChangeEnvelope.decode(message.data, streamSequence: message.streamSequence)
            let expected = try ChangeEnvelope.decode(try ChangeEnvelope.encode(commit, store: identifier), streamSequence: 0)
            #expect(received.commit == expected.commit, "commit \(commit.sequence), seed \(seed)")
            // Each entity's catalog entry comes with its first commit in the stream.
            for entity in Set(commit.entries.map(\.entity)) where !described.contains(entity) {
                let current = try store.catalog.entities[entity]
                #expect(received.schemas[entity]?.indexes == current?.indexes && received.schemas[entity]?.primaryKeyKind == current?.primaryKeyKind,
                        "commit \(commit.sequence)")
            }
            described.formUnion(received.schemas.keys)
        }
    }

    @Test(arguments: testSeeds(1))
    func everyCommitReachesTheStreamOnceInOrder(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let store = try Self.openStore(dir + "/primary")
            try Self.commit(store, 20, rng: &rng)  // before the shipper: not shipped
            let shipper = try JournalShipper(store: store, connection: JetStreamConnection(url: server.url), stream: Self.stream)
            let start = try #require(try store.read { try $0.recordImagesStart() })
            try Self.commit(store, 600, rng: &rng)
            let last = try store.read { try $0.journalBounds().last }
            try shipper.run(until: last)
            #expect(shipper.shippedSequence == last)
            try Self.expectStreamHoldsJournal(server, store: store, from: start, seed: seed)
            // The cursor is where the stream ends.
            #expect(try store.journalCursor(named: "jetstream:\(Self.stream)").position() == last)
        }
    }

    /// A shipper that stopped after the server stored commits but before its cursor moved (the
    /// cursor is put back here) continues after the stream's last commit; a server restart in
    /// between changes nothing.
    @Test(arguments: testSeeds(1, base: 7))
    func aShipperResumesAfterTheStreamsLastCommit(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let store = try Self.openStore(dir + "/primary")
            var shipper: JournalShipper? = try JournalShipper(store: store, connection: JetStreamConnection(url: server.url), stream: Self.stream)
            let start = try #require(try store.read { try $0.recordImagesStart() })
            try Self.commit(store, 100, rng: &rng)
            try shipper!.run(until: try store.read { try $0.journalBounds().last })
            shipper = nil
            let cursor = try store.journalCursor(named: "jetstream:\(Self.stream)")
            try cursor.remove()
            #expect(try store.journalCursor(named: "jetstream:\(Self.stream)", start: .oldest).position() < start)
            server.stop()
            try Self.commit(store, 50, rng: &rng)
            try server.start()
            shipper = try JournalShipper(store: store, connection: JetStreamConnection(url: server.url), stream: Self.stream)
            try Self.commit(store, 50, rng: &rng)
            try shipper!.run(until: try store.read { try $0.journalBounds().last })
            try Self.expectStreamHoldsJournal(server, store: store, from: start, seed: seed)
        }
    }

    /// Retention keeps every commit the shipper has not shipped, however far past the store's
    /// retention it is; a hard bound that trims them stops the shipper with a typed error.
    @Test func retentionKeepsWhatTheShipperHasNotShipped() throws {
        var rng = SeededGenerator(seed: 21)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let retention = JournalRetention(minimumCommits: 10)
            let store = try Store(path: dir + "/primary", entities: [Item.self, Note.self, Event.self],
                                  options: StoreOptions(durability: .none, journalRetention: retention))
            var shipper: JournalShipper? = try JournalShipper(store: store, connection: connection, stream: Self.stream)
            let start = try #require(try store.read { try $0.recordImagesStart() })
            try Self.commit(store, 300, rng: &rng)  // the shipper is not running
            try store.trimJournal()
            #expect(try store.read { try $0.journalBounds().first } <= start)
            try shipper!.run(until: try store.read { try $0.journalBounds().last })
            let shipped = try Self.streamMessages(server)
            #expect(shipped.count == Int(try store.read { try $0.journalBounds().last } - start + 1))
            // Shipped commits are trimmed down to the retention's minimum.
            try store.trimJournal()
            let bounds = try store.read { try $0.journalBounds() }
            #expect(bounds.last - bounds.first + 1 <= 10 + 1, "\(bounds)")

            // A hard bound trims unshipped commits: the shipper says so instead of leaving a gap.
            shipper = nil
            store.close()
            let bounded = try Store(path: dir + "/primary", entities: [Item.self, Note.self, Event.self],
                                    options: StoreOptions(durability: .none, journalRetention: JournalRetention(minimumCommits: 10, maximumCommits: 20)))
            try Self.commit(bounded, 100, rng: &rng)
            try bounded.trimJournal()
            #expect {
                try JournalShipper(store: bounded, connection: connection, stream: Self.stream).shipAvailable()
            } throws: { error in
                guard case JetStreamError.storeBehindStream = error else { return false }
                return true
            }
        }
    }

    @Test func aSecondShipperIsRefused() throws {
        var rng = SeededGenerator(seed: 3)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let primary = try Self.openStore(dir + "/primary")
            var shipper: JournalShipper? = try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            try Self.commit(primary, 10, rng: &rng)
            try shipper!.run(until: try primary.read { try $0.journalBounds().last })

            // The same store, a second time: the lock refuses it.
            #expect {
                try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            } throws: { error in
                guard case JetStreamError.anotherShipper = error else { return false }
                return "\(error)".contains("already runs")
            }

            // Another store, the same stream: refused by the stream's last message.
            let other = try Store(path: dir + "/other", entities: [Item.self], options: StoreOptions(durability: .none))
            #expect { try JournalShipper(store: other, connection: connection, stream: Self.stream) } throws: { error in
                guard case JetStreamError.streamHoldsAnotherStore = error else { return false }
                return true
            }

            // Copies of the primary (the same identifier): one whose history forks from the
            // primary's, and one that stays behind.
            try primary.copy(to: dir + "/copy", compact: true)
            try primary.copy(to: dir + "/behind", compact: true)
            let copy = try Self.openStore(dir + "/copy")
            try Self.commit(copy, 3, rng: &rng)
            var copyShipper: JournalShipper? = try JournalShipper(store: copy, connection: connection, stream: Self.stream)
            // Both resumed at the same stream sequence; the copy ships first, and the primary's
            // next publish finds the stream moved.
            try copyShipper!.run(until: try copy.read { try $0.journalBounds().last })
            copyShipper = nil
            try Self.commit(primary, 2, rng: &rng)
            #expect { try shipper!.shipAvailable() } throws: { error in
                guard case JetStreamError.anotherShipper = error else { return false }
                return true
            }
            shipper = nil
            // Restarted, the primary finds a commit of the same sequence but another content.
            try Self.commit(primary, 5, rng: &rng)
            #expect { try JournalShipper(store: primary, connection: connection, stream: Self.stream) } throws: { error in
                guard case JetStreamError.historyDiverged = error else { return false }
                return true
            }
            // The copy left behind finds commits in the stream that it lacks.
            let behind = try Self.openStore(dir + "/behind")
            #expect { try JournalShipper(store: behind, connection: connection, stream: Self.stream) } throws: { error in
                guard case JetStreamError.streamAheadOfStore = error else { return false }
                return true
            }
        }
    }
}
