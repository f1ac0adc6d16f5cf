@_spi(Replication) import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// Promotion against a real `nats-server -js`: a replica takes over the stream while the old
/// primary keeps committing and shipping; the stream's fence keeps one writer, no acknowledged
/// commit is lost, the old primary is refused and told what never shipped, and other replicas
/// follow the promoted store without re-seeding.
@Suite(.serialized, .blocking) struct PromotionTests {
    static let stream = ShipperTests.stream

    @Test(arguments: testSeeds(2, base: 61))
    func aPromotedReplicaTakesOverWhileTheOldPrimaryShips(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            defer { server.stop() }
            let connection = JetStreamConnection(url: server.url)
            let old = try ShipperTests.openStore(dir + "/old")
            // A cursor that reads nothing keeps the old primary's whole journal for the comparison
            // below, however many commits it makes before the promotion refuses it.
            _ = try old.journalCursor(named: "test", start: .oldest)
            try ShipperTests.commit(old, 40, rng: &rng)
            // Held in a box that the old primary's thread alone uses, then empties: the
            // shipper's lock goes with it, so that a restarted one can be tried.
            final class Box: @unchecked Sendable { var shipper: JournalShipper? }
            let box = Box()
            box.shipper = try JournalShipper(store: old, connection: connection, stream: Self.stream)
            try ShipperTests.commit(old, 30, rng: &rng)
            try box.shipper!.run(until: try old.read { try $0.journalBounds().last })
            let first = try ReplicaFollower(path: dir + "/first", connection: connection, stream: Self.stream, durability: .none)
            let second = try ReplicaFollower(path: dir + "/second", connection: connection, stream: Self.stream, durability: .none)
            defer { second.replica.close() }
            try first.run(untilOriginSequence: try old.read { try $0.journalBounds().last })

            // The old primary keeps committing and shipping until the stream refuses it.
            let refusal = Locked<(any Error)?>(nil)
            let oldPrimary = Thread {
                var rng = SeededGenerator(seed: seed &+ 1)
                while refusal.current == nil {
                    do {
                        try ShipperTests.commit(old, 1, rng: &rng)
                        try box.shipper!.shipAvailable()
                    } catch { refusal.withLock { $0 = error } }
                }
            }
            oldPrimary.start()
            Thread.sleep(forTimeInterval: 0.05)
            let promoted = try first.promote(durability: .none)
            defer { promoted.close() }
            let through = try promoted.read { try $0.journalBounds().last }
            let promotedID = try #require(try promoted.read { try $0.storeIdentifier() })
            #expect(try promoted.read { try $0.replicaState() } == nil)
            #expect(!promoted.isReadOnly)
            // Within a few rounds the old primary's next publish meets the fence.
            let deadline = Date().addingTimeInterval(10)
            while refusal.current == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            while !oldPrimary.isFinished { Thread.sleep(forTimeInterval: 0.01) }
            box.shipper = nil
            let oldLast = try old.read { try $0.journalBounds().last }
            guard case let JetStreamError.supersededByPromotion(stream, promotedStore, recordThrough, unshipped)? = refusal.current else {
                Issue.record("the old primary was not refused as superseded: \(String(describing: refusal.current)), seed \(seed)")
                return
            }
            #expect(stream == Self.stream && promotedStore == promotedID && recordThrough == through, "seed \(seed)")
            #expect(unshipped == (through + 1)...oldLast, "\(String(describing: unshipped)), through \(through), old last \(oldLast), seed \(seed)")
            #expect(String(describing: refusal.current!).contains("another store now ships to stream \(Self.stream)"))

            // Every commit the stream acknowledged before the promotion is in the promoted store:
            // its journal is the old primary's through `through`, as far back as it keeps
            // commits (the newest 1,000 at least, which a busy old primary may outrun).
            let kept = try promoted.read { try $0.journalBounds().first }
            #expect(kept >= 1 && through - kept + 1 >= min(through, 1_000), "commits \(kept)–\(through) kept, seed \(seed)")
            let oldCommits = try old.read { try $0.journal(after: kept - 1, limit: Int(through - kept + 1)) }
            let promotedCommits = try promoted.read { try $0.journal(after: kept - 1, limit: Int(through - kept + 1)) }
            func entries(_ commits: [JournalCommit]) -> [[JournalEntry]] { commits.map { $0.entries.map { var e = $0; e.record = nil; return e } } }
            #expect(promotedCommits.map(\.sequence) == oldCommits.map(\.sequence) && entries(promotedCommits) == entries(oldCommits), "seed \(seed)")

            // The old primary's shipper, restarted, is refused the same way and merges nothing.
            #expect { _ = try JournalShipper(store: old, connection: connection, stream: Self.stream) } throws: { error in
                guard case let JetStreamError.supersededByPromotion(_, store, _, range) = error else { return false }
                return store == promotedID && range == (through + 1)...oldLast
            }

            // The promoted store ships on the same stream; the other replica follows it.
            let newShipper = try JournalShipper(store: promoted, connection: connection, stream: Self.stream)
            #expect(newShipper.shippedSequence == through)
            try ShipperTests.commit(promoted, 25, rng: &rng)
            let last = try promoted.read { try $0.journalBounds().last }
            try newShipper.run(until: last)
            try second.run(untilOriginSequence: last)
            #expect(second.state?.origin == promotedID)
            try FollowerTests.expectReplicaEqualsPrimary(promoted, second.replica, "the second replica, seed \(seed)")
            // A replica started from nothing now follows the promoted store too.
            let third = try ReplicaFollower(path: dir + "/third", connection: connection, stream: Self.stream, durability: .none)
            defer { third.replica.close() }
            try third.run(untilOriginSequence: last)
            try FollowerTests.expectReplicaEqualsPrimary(promoted, third.replica, "a replica from nothing, seed \(seed)")
        }
    }

    /// The async form stops with `CancellationError` when its task is cancelled before the
    /// promotion record is published, leaving the replica a replica; uncancelled, it promotes.
    @Test func theAsyncPromotionHonoursCancellation() async throws {
        var rng = SeededGenerator(seed: 4)
        try await withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try ShipperTests.startPrimary(in: dir)
            defer { server.stop() }
            try ShipperTests.commit(primary, 20, rng: &rng)
            let last = try await primary.read { try $0.journalBounds().last }
            try shipper.run(until: last)
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream, durability: .none)
            try follower.run(untilOriginSequence: last)
            nonisolated(unsafe) let standby = follower
            let cancelled = Task { () async throws -> Store in
                withUnsafeCurrentTask { $0?.cancel() }
                return try await standby.promote(durability: .none)
            }
            await #expect(throws: CancellationError.self) { _ = try await cancelled.value }
            let messages = try ShipperTests.streamMessages(server)
            #expect(!messages.contains { $0.id?.hasPrefix("promotion:") == true })
            #expect(follower.state?.originSequence == last)
            let promoted = try await follower.promote(durability: .none)
            defer { promoted.close() }
            #expect(try await promoted.read { try $0.replicaState() } == nil)
            #expect(try ShipperTests.streamMessages(server).last?.id?.hasPrefix("promotion:") == true)
        }
    }

    /// Promoting again after the record was published (a crash before the store became
    /// writable) finishes that promotion instead of making a second one.
    @Test func promotingTwiceFinishesTheFirstPromotion() throws {
        var rng = SeededGenerator(seed: 3)
        try withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try ShipperTests.startPrimary(in: dir)
            defer { server.stop() }
            try ShipperTests.commit(primary, 20, rng: &rng)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let path = dir + "/replica"
            let promoted: Store = try {
                let follower = try ReplicaFollower(path: path, connection: connection, stream: Self.stream, durability: .none)
                return try follower.promote(durability: .none)
            }()
            let messages = try ShipperTests.streamMessages(server).count
            // The state a crash between the record and the local write leaves.
            let through = try promoted.read { try $0.journalBounds().last }
            promoted.close()
            let raw = try Store(path: path, options: { var o = StoreOptions(durability: .none); o.writesReplica = true; return o }())
            let record = try #require(try ShipperTests.streamMessages(server).last)
            let envelope = try ChangeEnvelope.decode(record.data, streamSequence: record.streamSequence)
            try raw.write { try $0.setReplicaState(ReplicaState(origin: UUID(uuidString: envelope.store)!, streamSequence: record.streamSequence, originSequence: through)) }
            raw.close()
            let follower = try ReplicaFollower(path: path, connection: connection, stream: Self.stream, durability: .none)
            #expect(follower.state != nil)
            let again = try follower.promote(durability: .none)
            defer { again.close() }
            #expect(try ShipperTests.streamMessages(server).count == messages)
            #expect(try again.read { try $0.replicaState() } == nil)
        }
    }
}
