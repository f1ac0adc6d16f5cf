import DemoFeed
import Feedstore
import FeedstoreJetStream
import Foundation
import NATSTestServer

/// Replicas from nothing and takeover, on a real `nats-server -js` on loopback:
/// - a store of `messages` messages compacted to a file (`storectl compact`), stored as a snapshot
///   in the bucket, and restored into an empty replica by a follower (the time until it is ready
///   to follow), each timed;
/// - one-row durable commits per second on the primary while its shipper ships them, before and
///   while the shipper takes and stores a snapshot;
/// - from `promote` on a replica to the first commit of the promoted store in the stream.
struct JetStreamTakeover {
    var directory: String
    var messages: Int
    static let stream = "FEED"

    struct Result {
        var messages: Int
        var storeBytes: Int
        var compactSeconds: Double
        var snapshotSeconds: Double
        var restoreSeconds: Double
        var commitsAlone: Double
        var commitsDuringSnapshot: Double
        var promoteToShipped: [Double]
    }

    func run() throws -> Result {
        let loopback = try LoopbackServer(directory: directory)
        defer { withExtendedLifetime(loopback) {} }
        let connection = loopback.connection
        var feed = DemoFeed(seed: 42)
        let path = directory + "/primary"
        try feed.load(into: path, messages: messages, contacts: 1_000)
        let primary = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
        defer { primary.close() }
        var info = stat()
        stat(path + "/data.mdb", &info)

        var started = Date()
        try primary.copy(to: directory + "/compacted", compact: true)
        let compactSeconds = -started.timeIntervalSinceNow
        var compacted = stat()
        stat(directory + "/compacted/data.mdb", &compacted)
        try FileManager.default.removeItem(atPath: directory + "/compacted")

        // What the snapshot does, from the shipper's snapshot thread.
        final class Outcome: @unchecked Sendable {
            let lock = NSLock()
            var started: Date?
            var finished: Date?
            var failure: (any Error)?
            var stopping = false
        }
        let outcome = Outcome()
        // A first snapshot, so that the shipper starts without taking one; it takes the next
        // once `every` commits have shipped, while this thread goes on committing.
        let bucket = try SnapshotBucket(connection: connection, name: SnapshotBucket.defaultName(forStream: Self.stream), create: true)
        try bucket.publish(from: primary, keep: 1)
        let every: UInt64 = messages >= 1_000_000 ? 8_000 : 4_000
        let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream,
                                         snapshots: SnapshotSchedule(everyCommits: every, keep: 1), onSnapshot: { event in
            outcome.lock.withLock {
                switch event {
                case .started: outcome.started = Date()
                case .finished: outcome.finished = Date()
                case let .failed(error): outcome.failure = error
                case .stored: break
                }
            }
        })
        // The shipper runs on a thread of its own, as `storectl ship` does, from the start.
        nonisolated(unsafe) let shipperRef = shipper
        let shipping = Thread {
            do { try shipperRef.run(while: { !outcome.lock.withLock { outcome.stopping } }) } catch {
                outcome.lock.withLock { outcome.failure = error }
            }
        }
        shipping.start()
        // One-row durable commits on this thread, each with when it returned, until the
        // snapshot is stored.
        var nextID = UInt64(messages) + 1
        var commitTimes: [Date] = []
        while outcome.lock.withLock({ outcome.finished == nil && outcome.failure == nil }) {
            try primary.write { tx in try tx.put(feed.message(id: nextID, contacts: 1_000)) }
            nextID += 1
            commitTimes.append(Date())
        }
        outcome.lock.withLock { outcome.stopping = true }
        while !shipping.isFinished { usleep(1_000) }
        if let failure = outcome.failure { throw failure }
        let (snapshotStarted, snapshotFinished) = outcome.lock.withLock { (outcome.started!, outcome.finished!) }
        // Commits per second before the snapshot (the first second left out: the shipper's
        // start), and while it was taken and stored.
        func rate(from: Date, to: Date) -> Double {
            Double(commitTimes.filter { $0 > from && $0 <= to }.count) / to.timeIntervalSince(from)
        }
        let alone = rate(from: commitTimes[0].addingTimeInterval(1), to: snapshotStarted)
        let during = rate(from: snapshotStarted, to: snapshotFinished)
        let snapshotSeconds = snapshotFinished.timeIntervalSince(snapshotStarted)

        // The primary ships; a replica from nothing restores the snapshot and is ready to follow.
        try shipper.run(until: try primary.read { try $0.journalBounds().last })
        started = Date()
        let follower = try ReplicaFollower(path: directory + "/replica", connection: connection, stream: Self.stream, durability: .full)
        let restoreSeconds = -started.timeIntervalSinceNow
        try follower.run(untilOriginSequence: shipper.shippedSequence)

        // Promotion: from the call to the promoted store's first commit acknowledged by the stream.
        let promoted = try follower.promote()
        follower.replica.close()
        _ = promoted
        promoted.close()
        var promotions: [Double] = []
        for round in 0..<5 {
            // A fresh pair each round: a primary with a replica that follows it.
            let dir = directory + "/round\(round)"
            let roundServer = try NATSServer(directory: dir)
            defer { roundServer.stop() }
            let roundConnection = JetStreamConnection(url: roundServer.url)
            let old = try Store(path: dir + "/old", entities: DemoFeed.entities, options: StoreOptions(durability: .full))
            let oldShipper = try JournalShipper(store: old, connection: roundConnection, stream: Self.stream)
            for _ in 0..<100 {
                try old.write { tx in try tx.put(feed.message(id: nextID, contacts: 1_000)) }
                nextID += 1
            }
            try oldShipper.run(until: try old.read { try $0.journalBounds().last })
            let replica = try ReplicaFollower(path: dir + "/replica", connection: roundConnection, stream: Self.stream, durability: .full)
            try replica.run(untilOriginSequence: oldShipper.shippedSequence)
            let start = Date()
            let store = try replica.promote()
            let newShipper = try JournalShipper(store: store, connection: roundConnection, stream: Self.stream)
            try store.write { tx in try tx.put(feed.message(id: nextID, contacts: 1_000)) }
            nextID += 1
            while try newShipper.shipAvailable() == 0 {}
            promotions.append(-start.timeIntervalSinceNow)
            store.close()
            replica.replica.close()
            old.close()
        }
        return Result(messages: messages, storeBytes: Int(compacted.st_size), compactSeconds: compactSeconds,
                      snapshotSeconds: snapshotSeconds, restoreSeconds: restoreSeconds, commitsAlone: alone,
                      commitsDuringSnapshot: during, promoteToShipped: promotions)
    }

    static func format(_ r: Result) -> [String] {
        let mb = Double(r.storeBytes) / 1_048_576
        let ratio = r.restoreSeconds / r.compactSeconds, kept = r.commitsDuringSnapshot / r.commitsAlone
        let promote = r.promoteToShipped.sorted()[r.promoteToShipped.count / 2] * 1_000
        let worstPromote = r.promoteToShipped.max()! * 1_000
        return ["", "Replicas from nothing and takeover: a store of \(r.messages.formatted()) messages (\(String(format: "%.0f", mb)) MiB compacted), primary durability full\n",
                "| step | seconds | MiB/s |", "|---|---:|---:|",
                "| compact copy of the store (storectl compact) | \(String(format: "%.2f", r.compactSeconds)) | \(String(format: "%.0f", mb / r.compactSeconds)) |",
                "| snapshot taken and stored in the bucket, while the primary commits | \(String(format: "%.2f", r.snapshotSeconds)) | \(String(format: "%.0f", mb / r.snapshotSeconds)) |",
                "| replica restored from nothing, ready to follow | \(String(format: "%.2f", r.restoreSeconds)) | \(String(format: "%.0f", mb / r.restoreSeconds)) |",
                "", "| primary, one-row durable commits | commits/s |", "|---|---:|",
                "| shipped, no snapshot running | \(Int(r.commitsAlone).formatted()) |",
                "| shipped, while the shipper takes and stores a snapshot | \(Int(r.commitsDuringSnapshot).formatted()) |",
                "", "Promotion of a replica to the first commit of the promoted store acknowledged by the stream, \(r.promoteToShipped.count) rounds: median \(String(format: "%.1f", promote)) ms, slowest \(String(format: "%.1f", worstPromote)) ms",
                "", "Targets\n", "| target | result | met |", "|---|---:|---|",
                "| restore of the store at most 2× its compact copy | \(String(format: "%.2f", ratio))× | \(ratio <= 2 ? "yes" : "no") |",
                "| one-row commits while a snapshot ships: at least 90% of those without | \(String(format: "%.0f", kept * 100))% | \(kept >= 0.9 ? "yes" : "no") |",
                "| promote → first commit shipped: at most 1 s | \(String(format: "%.0f", worstPromote)) ms | \(worstPromote <= 1_000 ? "yes" : "no") |"]
    }
}
