import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// The follower against a real `nats-server -js`: a replica, from an empty store or from a copy
/// of the primary, ends equal to the primary (records, every index, the journal), verifies clean,
/// refuses other writers, and its watchers end equal to a fresh query.
@Suite(.serialized, .blocking) struct FollowerTests {
    /// A follower says how far behind the stream its replica is: the commits waiting, and how
    /// long ago the origin made the last one applied while some wait.
    @Test func lagCountsTheCommitsTheStreamHoldsPastTheReplica() throws {
        try withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try ShipperTests.startPrimary(in: dir)
            _ = server
            var rng = SeededGenerator(seed: 31)
            try ShipperTests.commit(primary, 10, rng: &rng)
            let first = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: first)
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: ShipperTests.stream)
            defer { follower.replica.close() }
            // No snapshot could rebuild this replica, so its commits are synced.
            #expect(follower.durability == .relaxed)
            let waiting = try follower.lag()
            #expect(waiting.commits == 10 && waiting.milliseconds == nil, "\(waiting)")
            try follower.run(untilOriginSequence: first)
            let caughtUp = try follower.lag()
            #expect(caughtUp.commits == 0 && caughtUp.milliseconds == 0, "\(caughtUp)")
            try ShipperTests.commit(primary, 4, rng: &rng)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let behind = try follower.lag()
            #expect(behind.commits == 4 && (behind.milliseconds ?? -1) >= 0, "\(behind)")
        }
    }

    static let stream = ShipperTests.stream

    /// The replica holds the primary's entities, records, index entries and journal from
    /// `from` on (the same commits, sequences and entries).
    static func expectReplicaEqualsPrimary(_ primary: Store, _ replica: Store, journalFrom from: UInt64 = 1, _ context: String) throws {
        let primaryCatalog = try primary.catalog, replicaCatalog = try replica.catalog
        #expect(Set(replicaCatalog.entities.keys) == Set(primaryCatalog.entities.keys), "\(context)")
        for (name, entity) in primaryCatalog.entities {
            #expect(replicaCatalog.entities[name]?.primaryKeyKind == entity.primaryKeyKind, "\(name), \(context)")
            #expect(replicaCatalog.entities[name]?.indexes.map(\.definition) == entity.indexes.map(\.definition), "\(name), \(context)")
            for index in [nil] + entity.indexes.map({ Optional($0.definition.name) }) {
                let expected = try primary.read { try $0.entries(entity: name, index: index) }
                let found = try replica.read { try $0.entries(entity: name, index: index) }
                let firstDifference = zip(found, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                #expect(found.count == expected.count && firstDifference == nil,
                        "\(name) by \(index ?? "primary key"): \(found.count) entries, expected \(expected.count), first difference at \(firstDifference ?? -1), \(context)")
            }
        }
        // Each store trims its own journal: compare the commits both keep.
        let last = try primary.read { try $0.journalBounds().last }
        let from = max(from, try primary.read { try $0.journalBounds().first }, try replica.read { try $0.journalBounds().first })
        let primaryJournal = try primary.read { try $0.journal(after: from - 1, limit: Int(last)) }
        let replicaJournal = try replica.read { try $0.journal(after: from - 1, limit: Int(last)) }
        #expect(replicaJournal.count == primaryJournal.count, "\(context)")
        // The replica's journal keeps no records of its own (it ships nothing).
        func withoutRecords(_ commit: JournalCommit) -> [JournalEntry] { commit.entries.map { var e = $0; e.record = nil; return e } }
        let firstDifference = zip(replicaJournal, primaryJournal).enumerated().first { $0.element.0.sequence != $0.element.1.sequence || withoutRecords($0.element.0) != withoutRecords($0.element.1) }?.offset
        #expect(firstDifference == nil, "the journals differ at commit \(firstDifference.map { primaryJournal[$0].sequence } ?? 0), \(context)")
        #expect(try replica.verify().isEmpty, "\(context)")
    }

    @Test(arguments: testSeeds(1, base: 11))
    func aReplicaFromAnEmptyStoreEndsEqualToThePrimary(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try ShipperTests.startPrimary(in: dir)
            defer { server.stop() }  // keeps the server until the test ends
            try ShipperTests.commit(primary, 300, rng: &rng)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })

            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream, durability: .none)
            // Asked for, not chosen: without snapshots the choice would be `.relaxed`.
            #expect(follower.durability == .none)
            // A watcher on the replica, opened by an application once the replica has `Item`.
            try follower.run(untilOriginSequence: 20)
            let reader = try Store(path: dir + "/replica", options: StoreOptions(durability: .none, readOnly: true))
            let query = Query(Item.self, index: "byGroupScore")
            let watcher = reader.watch(query)
            var mirror = SectionedMirror<Item>()
            try mirror.apply(try #require(try watcher.next(timeout: 5)))

            let last = try primary.read { try $0.journalBounds().last }
            try follower.run(untilOriginSequence: last)
            #expect(follower.state?.originSequence == last)
            #expect(follower.state?.origin == (try primary.read { try $0.storeIdentifier() }))
            try Self.expectReplicaEqualsPrimary(primary, follower.replica, "seed \(seed)")

            // More commits, followed as they are shipped.
            try ShipperTests.commit(primary, 100, rng: &rng)
            let newest = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: newest)
            try follower.run(untilOriginSequence: newest)
            try Self.expectReplicaEqualsPrimary(primary, follower.replica, "seed \(seed), after more commits")

            // The watcher ends equal to a fresh query.
            while watcher.sequence < newest, let batch = try watcher.next(timeout: 5) { try mirror.apply(batch) }
            let fresh = try reader.read { try $0.objects(in: query) }
            #expect(mirror.rows.count == fresh.count && mirror.rows.map(\.id) == fresh.map(\.id), "seed \(seed)")
            // Typed values read back equal: dates to the last bit, nested values with their kinds.
            let events = Query(Event.self, index: "byAt")
            let replicaEvents = try reader.read { try $0.objects(in: events) }
            let primaryEvents = try primary.read { try $0.objects(in: events) }
            #expect(!replicaEvents.isEmpty && replicaEvents == primaryEvents, "seed \(seed)")
            let onPrimary = try primary.read { try $0.objects(in: query) }
            #expect(mirror.rows.count == onPrimary.count && mirror.rows.map(\.fields) == onPrimary.map(\.fields), "seed \(seed)")
            watcher.cancel()

            // Applications cannot write the replica.
            let application = try ShipperTests.openStore(dir + "/replica")
            #expect(application.isReadOnly)
            #expect { try application.write { try $0.put(Item(id: 1, group: 1, score: 1, name: "x", flag: false, tag: nil)) } } throws: { error in
                guard case let FeedstoreError.readOnly(_, reason) = error else { return false }
                return reason.contains("replica")
            }
            #expect(try application.read { try $0.replicaState() } == follower.state)
        }
    }

    /// A replica seeded from a copy of the primary continues after the copy's last commit;
    /// without a snapshot, an empty store cannot follow a stream that does not begin with the
    /// primary's first commit.
    @Test func aReplicaSeededFromACopyContinuesAfterIt() throws {
        var rng = SeededGenerator(seed: 5)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let primary = try ShipperTests.openStore(dir + "/primary")
            try ShipperTests.commit(primary, 30, rng: &rng)  // never shipped: the copy holds them
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil)
            try ShipperTests.commit(primary, 40, rng: &rng)
            try primary.copy(to: dir + "/replica", compact: true)
            let copied = try primary.read { try $0.journalBounds().last }
            try ShipperTests.commit(primary, 40, rng: &rng)
            let last = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: last)

            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream, durability: .none)
            #expect(follower.state?.originSequence == copied)
            try follower.run(untilOriginSequence: last)
            try Self.expectReplicaEqualsPrimary(primary, follower.replica, "seeded from a copy")

            #expect { try ReplicaFollower(path: dir + "/empty", connection: connection, stream: Self.stream, durability: .none) } throws: { error in
                guard case let JetStreamError.noSnapshot(_, reason) = error else { return false }
                return reason.contains("the stream begins with commit")
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/empty/data.mdb"))
            // One follower per replica.
            #expect { try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream) } throws: { error in
                guard case JetStreamError.anotherFollower = error else { return false }
                return true
            }
        }
    }

    /// A store with commits of its own that is not a copy of the stream's origin (a primary
    /// given by mistake) is refused, and stays as it was: writable, no replica.
    @Test func aStoreThatIsNotACopyOfTheOriginIsNotMadeItsReplica() throws {
        var rng = SeededGenerator(seed: 8)
        try withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try ShipperTests.startPrimary(in: dir)
            _ = server
            // A second primary shipping to a stream that holds nothing yet.
            let quiet = try ShipperTests.openStore(dir + "/quiet")
            _ = try JournalShipper(store: quiet, connection: connection, stream: "QUIET", snapshots: nil)
            try ShipperTests.commit(primary, 20, rng: &rng)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let other = try ShipperTests.openStore(dir + "/other")
            try ShipperTests.commit(other, 10, rng: &rng)
            let otherID = try #require(try other.read { try $0.storeIdentifier() })
            other.close()

            for (stream, origin) in [(ShipperTests.stream, primary), ("QUIET", quiet)] {
                let originID = try #require(try origin.read { try $0.storeIdentifier() })
                #expect { try ReplicaFollower(path: dir + "/other", connection: connection, stream: stream, durability: .none) } throws: { error in
                    error as? JetStreamError == .streamHoldsAnotherStore(stream: stream, found: originID.uuidString.lowercased(), expected: otherID)
                }
            }
            let reopened = try ShipperTests.openStore(dir + "/other")
            defer { reopened.close() }
            #expect(try reopened.read { try $0.replicaState() } == nil)
            try ShipperTests.commit(reopened, 1, rng: &rng)
        }
    }

    /// While the server is down, the replica serves its last applied state and the follower waits;
    /// once the server is back, shipper and follower continue on their own connections.
    @Test func aReplicaServesItsLastStateDuringAPartitionAndCatchesUpAfter() throws {
        var rng = SeededGenerator(seed: 9)
        try withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try ShipperTests.startPrimary(in: dir)
            try ShipperTests.commit(primary, 60, rng: &rng)
            let before = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: before)
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream, durability: .none)
            try follower.run(untilOriginSequence: before)
            let query = Query(Item.self, index: "byGroupScore")
            let applied = try follower.replica.read { try $0.objects(in: query) }.map(\.fields)

            server.stop()
            try ShipperTests.commit(primary, 40, rng: &rng)  // the primary keeps taking writes
            #expect(try follower.applyAvailable(wait: .milliseconds(300)) == 0)
            #expect(try follower.replica.read { try $0.objects(in: query) }.map(\.fields) == applied)
            #expect(follower.state?.originSequence == before)

            try server.start()
            let after = try primary.read { try $0.journalBounds().last }
            let deadline = Date().addingTimeInterval(30)
            while shipper.shippedSequence < after, Date() < deadline {
                do { try shipper.shipAvailable() } catch JetStreamError.timedOut { continue }
            }
            try follower.run(untilOriginSequence: after)
            try Self.expectReplicaEqualsPrimary(primary, follower.replica, "after the partition")
        }
    }

    /// A batch as text: every list with its paths, ids, changed fields and values (fields sorted).
    static func describe(_ batch: ChangeBatch<Item>?) -> String {
        guard let batch else { return "none" }
        func value(_ item: Item) -> String { item.fields.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") }
        return "\(batch.fromSequence)→\(batch.toSequence) sections -\(batch.sectionDeletes) +\(batch.sectionInserts.map { "\($0.index):\($0.key)" }) "
            + "deletes \(batch.deletes.map { "\($0.path) \($0.id)" }) inserts \(batch.inserts.map { "\($0.path) \($0.id) \(value($0.value))" }) "
            + "moves \(batch.moves.map { "\($0.from)→\($0.to) \($0.id) \($0.fields) \(value($0.value))" }) "
            + "updates \(batch.updates.map { "\($0.from)→\($0.to) \($0.id) \($0.fields) \(value($0.value))" })"
    }

    /// Watchers of the replica deliver, commit by commit, the very batches that the same
    /// watchers of the primary deliver: a sectioned list and a sectioned window of it.
    @Test(arguments: testSeeds(1, base: 31))
    func aReplicasWatchersDeliverThePrimarysBatches(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            let primary = try Store(path: dir + "/primary", entities: [Item.self], options: StoreOptions(durability: .none))
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            try primary.write { try $0.put(Item(id: 1, group: 1, score: 1, name: "item 1", flag: false, tag: nil)) }
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream, durability: .none)
            try follower.run(untilOriginSequence: shipper.shippedSequence)
            let query = Query(Item.self, index: "byGroupScore")
            let shapes = [WatchOptions(sectionBy: 1), WatchOptions(sectionBy: 1, window: WatchWindow(offset: 5, limit: 10))]
            let onPrimary = shapes.map { primary.watch(query, options: $0) }
            let onReplica = shapes.map { follower.replica.watch(query, options: $0) }
            var compared = 0
            for step in 0..<100 {
                let before = try primary.read { try $0.journalBounds().last }
                try primary.write { tx in
                    for _ in 0..<Int.random(in: 1...3, using: &rng) {
                        let id = Int64.random(in: 1...40, using: &rng)
                        if Int.random(in: 0..<5, using: &rng) == 0 {
                            try tx.delete(Item.self, id: id)
                        } else {
                            try tx.put(Item(id: id, group: id % 3, score: Double(Int.random(in: 0..<50, using: &rng)), name: "item \(id)",
                                            flag: Bool.random(using: &rng), tag: nil))
                        }
                    }
                }
                let last = try primary.read { try $0.journalBounds().last }
                guard last > before else { continue }  // the write changed nothing
                try shipper.run(until: last)
                // One commit at a time, so each watcher's batch spans the same commit on both sides.
                while (follower.state?.originSequence ?? 0) < last { try follower.applyAvailable(limit: 1) }
                for (shape, (primaryWatcher, replicaWatcher)) in zip(onPrimary, onReplica).enumerated() {
                    // Initial batches first, then one batch per commit that changes the list. A
                    // commit is folded before write and applyAvailable return, so a batch is
                    // there at once; the timeout only bounds the wait when there is none.
                    let timeout = step == 0 ? 5.0 : 0.05
                    var expected = try primaryWatcher.next(timeout: timeout)
                    var found = try replicaWatcher.next(timeout: timeout)
                    if step == 0 {
                        #expect(Self.describe(found) == Self.describe(expected), "initial, shape \(shape)")
                        expected = primaryWatcher.sequence < last ? try primaryWatcher.next(timeout: 1) : nil
                        found = replicaWatcher.sequence < last ? try replicaWatcher.next(timeout: 1) : nil
                    }
                    #expect(Self.describe(found) == Self.describe(expected), "commit \(last), shape \(shape), seed \(seed)")
                    if expected != nil { compared += 1 }
                }
            }
            #expect(compared > 80, "only \(compared) batches compared")
            for watcher in onPrimary + onReplica { watcher.cancel() }
        }
    }

    /// A shipper and a follower running their loops (as `storectl ship` and `storectl follow`
    /// do) go through a restart of the server that lasts longer than a request's timeout: the
    /// shipper reconnects and continues after the stream's last commit, the follower's consumer
    /// resumes, and the replica ends equal to the primary.
    @Test func runningLoopsGoThroughAServerRestart() throws {
        var rng = SeededGenerator(seed: 41)
        try withTemporaryDirectory { dir in
            let (server, connection, primary, shipper) = try ShipperTests.startPrimary(in: dir)
            try ShipperTests.commit(primary, 20, rng: &rng)
            try shipper.run(until: try primary.read { try $0.journalBounds().last })
            let follower = try ReplicaFollower(path: dir + "/replica", connection: connection, stream: Self.stream, durability: .none)
            let done = Locked(false)
            let failures = Locked<[String]>([])
            nonisolated(unsafe) let (shipping, following) = (shipper, follower)
            let outages = Locked<[String]>([])
            let threads = [Thread {
                do {
                    try shipping.run(while: { !done.current }, onOutage: { error in outages.withLock { $0.append("\(error)") } })
                } catch { failures.withLock { $0.append("shipper: \(error)") } }
            }, Thread {
                do { try following.run { !done.current } } catch { failures.withLock { $0.append("follower: \(error)") } }
            }]
            threads.forEach { $0.start() }
            try ShipperTests.commit(primary, 30, rng: &rng)
            usleep(100_000)
            server.stop()
            try ShipperTests.commit(primary, 30, rng: &rng)  // while the server is down
            usleep(7_000_000)  // longer than a request's timeout
            try server.start()
            try ShipperTests.commit(primary, 30, rng: &rng)
            let last = try primary.read { try $0.journalBounds().last }
            let deadline = Date().addingTimeInterval(60)
            while (follower.state?.originSequence ?? 0) < last, failures.current.isEmpty, Date() < deadline { usleep(20_000) }
            done.withLock { $0 = true }
            while threads.contains(where: \.isExecuting) { usleep(10_000) }
            #expect(failures.current.isEmpty, "\(failures.current)")
            // The shipper's acknowledgments timed out during the outage, and it reconnected.
            #expect(!outages.current.isEmpty)
            #expect(follower.state?.originSequence == last)
            try Self.expectReplicaEqualsPrimary(primary, follower.replica, "after a server restart")
        }
    }
}
