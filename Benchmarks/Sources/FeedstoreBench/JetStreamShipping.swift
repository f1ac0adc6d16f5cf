import DemoFeed
import Feedstore
@_spi(Benchmarking) import FeedstoreJetStream
import Foundation
import NATSTestServer

/// A primary's journal shipped to a JetStream stream on loopback (a real `nats-server -js`
/// started here) and followed into a replica:
/// - one-row commits shipped per second, from a backlog, with the time spent reading and encoding
///   the commits measured apart (the rest is NATS: publishing and acknowledgments);
/// - bulk commits shipped, in rows per second;
/// - the follower applying the same stream, in commits and rows per second;
/// - latency from the start of a one-row commit on the primary to the batch in the hands of a
///   watcher on the replica, split into its legs: commit, in the stream (acknowledged), applied
///   to the replica, delivered.
struct JetStreamShipping {
    var directory: String
    var oneRowCommits: Int
    var bulkCommits: Int
    var rowsPerBulkCommit = 1_000
    var latencySamples: Int
    static let stream = "FEED"

    struct Rate {
        var what: String
        var commits: Int
        var rows: Int
        var seconds: Double
        /// Seconds of `seconds` spent reading the journal and encoding envelopes.
        var encoding: Double?
        /// The envelopes' size in all.
        var bytes: Int?
    }

    struct Latency {
        /// Per sample, seconds from the start of the commit to: its return, its acknowledgment
        /// by the stream, its application to the replica, the batch.
        var legs: [[Double]]
    }

    /// What the shipping and following threads see, with when: each step's newest sequence over
    /// time, the first error, and whether to stop.
    final class Progress: @unchecked Sendable {
        private let lock = NSLock()
        private var shipped: [(sequence: UInt64, at: UInt64)] = []
        private var applied: [(sequence: UInt64, at: UInt64)] = []
        private var stopping = false
        private(set) var failure: (any Error)?

        func didShip(through sequence: UInt64) { lock.withLock { shipped.append((sequence, DispatchTime.now().uptimeNanoseconds)) } }
        func didApply(through sequence: UInt64) { lock.withLock { applied.append((sequence, DispatchTime.now().uptimeNanoseconds)) } }
        func failed(_ error: any Error) { lock.withLock { if failure == nil { failure = error } } }
        func stop() { lock.withLock { stopping = true } }
        var running: Bool { lock.withLock { !stopping && failure == nil } }
        /// When each step first reached `sequence`.
        func reached(_ sequence: UInt64) -> (shipped: UInt64?, applied: UInt64?) {
            lock.withLock { (shipped.first { $0.sequence >= sequence }?.at, applied.first { $0.sequence >= sequence }?.at) }
        }
    }

    func run() throws -> (rates: [Rate], latencies: [Latency]) {
        let loopback = try LoopbackServer(directory: directory)
        defer { withExtendedLifetime(loopback) {} }
        let connection = loopback.connection
        let primary = try Store(path: directory + "/primary", entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        defer { primary.close() }
        // No snapshots: their cost is measured apart (JetStreamTakeover).
        let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream, snapshots: nil)
        let identifier = shipper.storeIdentifier
        // Keeps the commits shipped until they are read again for the encoding time.
        let reread = try primary.journalCursor(named: "bench", start: .latest)
        var feed = DemoFeed(seed: 42)
        var rates: [Rate] = []

        /// Ships the backlog; returns the rate, with the time to read and encode the same commits
        /// again (pages and catalog warm, as the shipper had them).
        func shipBacklog(_ what: String, rows: Int) throws -> Rate {
            let from = shipper.shippedSequence
            let through = try primary.read { try $0.journalBounds().last }
            let shipping = Date()
            while shipper.shippedSequence < through { try shipper.shipAvailable(limit: 512) }
            let shippingSeconds = -shipping.timeIntervalSinceNow
            let encoding = Date()
            let bytes = try Self.encodeJournal(of: primary, after: from, through: through, store: identifier)
            let encodingSeconds = -encoding.timeIntervalSinceNow
            try reread.acknowledge(through: through)
            return Rate(what: what, commits: Int(through - from), rows: rows, seconds: shippingSeconds, encoding: encodingSeconds, bytes: bytes)
        }

        // Contacts first (one bulk commit), then the one-row commits: a new message each.
        try primary.write { tx in for id in 1...1_000 { try tx.put(feed.contact(id: UInt64(id))) } }
        try shipper.shipAvailable()
        var nextID: UInt64 = 1
        for _ in 0..<oneRowCommits {
            try primary.write { tx in try tx.put(feed.message(id: nextID, contacts: 1_000)) }
            nextID += 1
        }
        rates.append(try shipBacklog("one-row commits", rows: oneRowCommits))
        // The follower applies the stream from its start: the contacts, then the one-row commits.
        let follower = try ReplicaFollower(path: directory + "/replica", connection: connection, stream: Self.stream, durability: .relaxed)
        defer { follower.replica.close() }
        let contactsCommit = try primary.read { try $0.recordImagesStart() }!
        try follower.run(untilOriginSequence: contactsCommit)
        var started = Date()
        try follower.run(untilOriginSequence: shipper.shippedSequence)
        rates.append(Rate(what: "one-row commits applied to a replica", commits: oneRowCommits, rows: oneRowCommits, seconds: -started.timeIntervalSinceNow))

        for _ in 0..<bulkCommits {
            try primary.write { tx in
                for _ in 0..<rowsPerBulkCommit {
                    try tx.put(feed.message(id: nextID, contacts: 1_000))
                    nextID += 1
                }
            }
        }
        rates.append(try shipBacklog("bulk commits of \(rowsPerBulkCommit.formatted()) new rows", rows: bulkCommits * rowsPerBulkCommit))
        started = Date()
        try follower.run(untilOriginSequence: shipper.shippedSequence)
        rates.append(Rate(what: "bulk commits applied to a replica", commits: bulkCommits, rows: bulkCommits * rowsPerBulkCommit,
                          seconds: -started.timeIntervalSinceNow))

        // Latency, with the replica's commits synced (relaxed) and not (none, the default with snapshots).
        var latencies = [try measureLatency(shipper: shipper, follower: follower, primary: primary, feed: &feed, nextID: &nextID)]
        follower.replica.close()
        let unsynced = try ReplicaFollower(path: directory + "/replica-none", connection: connection, stream: Self.stream, durability: .none)
        defer { unsynced.replica.close() }
        try unsynced.run(untilOriginSequence: shipper.shippedSequence)
        latencies.append(try measureLatency(shipper: shipper, follower: unsynced, primary: primary, feed: &feed, nextID: &nextID))
        return (rates, latencies)
    }

    /// Commits one-row changes one at a time, 2 ms apart, while the shipper and the follower run
    /// on threads of their own and wait as `storectl ship` and `storectl follow` do, and a watcher
    /// on the replica takes each batch; each commit's latency, split into its legs.
    func measureLatency(shipper: JournalShipper, follower: ReplicaFollower, primary: Store, feed: inout DemoFeed, nextID: inout UInt64) throws -> Latency {
        let progress = Progress()
        nonisolated(unsafe) let shipperRef = shipper, followerRef = follower
        let shipping = Thread {
            do {
                var shipped = shipperRef.shippedSequence
                try shipperRef.run {
                    if shipperRef.shippedSequence != shipped {
                        shipped = shipperRef.shippedSequence
                        progress.didShip(through: shipped)
                    }
                    return progress.running
                }
            } catch { progress.failed(error) }
        }
        let following = Thread {
            do {
                var applied = followerRef.state!.originSequence
                try followerRef.run {
                    if followerRef.state!.originSequence != applied {
                        applied = followerRef.state!.originSequence
                        progress.didApply(through: applied)
                    }
                    return progress.running
                }
            } catch { progress.failed(error) }
        }
        shipping.start()
        following.start()
        let watcher = follower.replica.watch(Query(Message.self, index: "byFolderDate"))
        _ = try watcher.next(timeout: 10)
        var legs: [[Double]] = []
        for sample in 0..<latencySamples {
            let start = DispatchTime.now().uptimeNanoseconds
            try primary.write { tx in try tx.put(feed.message(id: nextID, contacts: 1_000)) }
            let committed = DispatchTime.now().uptimeNanoseconds
            nextID += 1
            // This thread is the only writer: the newest commit is the one just made.
            let sequence = try primary.read { try $0.journalBounds().last }
            guard let batch = try watcher.next(timeout: 10), batch.inserts.count == 1 else {
                throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "sample \(sample): no batch within 10 s (\(String(describing: progress.failure)))"])
            }
            let delivered = DispatchTime.now().uptimeNanoseconds
            let reached = progress.reached(sequence)
            func seconds(_ t: UInt64?) -> Double { Double((t ?? delivered) - start) / 1e9 }
            legs.append([seconds(committed), seconds(reached.shipped), seconds(reached.applied), seconds(delivered)])
            usleep(2_000)
        }
        progress.stop()
        while shipping.isExecuting || following.isExecuting { usleep(1_000) }
        watcher.cancel()
        if let failure = progress.failure { throw failure }
        return Latency(legs: legs)
    }

}

extension JetStreamShipping {
    /// Reads the commits after `after` through `through` (the newest when nil) and encodes each
    /// as the shipper does, 512 commits a read; returns the envelopes' size in all.
    static func encodeJournal(of store: Store, after: UInt64, through: UInt64? = nil, store identifier: UUID,
                              each: ([UInt8]) throws -> Void = { _ in }) throws -> Int {
        var bytes = 0
        var after = after
        while after < (through ?? .max), let last = try store.read({ tx in
            let commits = try tx.journal(after: after, limit: 512)
            for commit in commits {
                let envelope = try ChangeEnvelope.encode(commit, store: identifier)
                bytes += envelope.count
                try each(envelope)
            }
            return commits.last?.sequence
        }) { after = last }
        return bytes
    }

    /// The results file's tables: rates, latency by leg, and the targets they are held to.
    static func format(rates: [Rate], latencies: [Latency]) -> [String] {
        func number(_ x: Double) -> String { Int(x.rounded()).formatted() }
        var lines = ["| job | commits | rows | seconds | commits/s | rows/s | envelope bytes per row | reading the journal and encoding, share of the time |",
                     "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rates {
            lines.append("| \(r.what) | \(r.commits.formatted()) | \(r.rows.formatted()) | \(String(format: "%.2f", r.seconds)) | "
                + "\(number(Double(r.commits) / r.seconds)) | \(number(Double(r.rows) / r.seconds)) | "
                + (r.bytes.map { number(Double($0) / Double(r.rows)) } ?? "–") + " | "
                + (r.encoding.map { String(format: "%.0f%%", 100 * $0 / r.seconds) } ?? "–") + " |")
        }
        func percentile(_ values: [Double], _ p: Double) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }
        let names = ["the primary's commit returned", "in the stream (the shipper has the acknowledgment)",
                     "applied to the replica", "batch in the hands of a watcher of the replica"]
        let replicas = ["replica durability relaxed (each applied commit synced right after the replica's watchers see it; the default when no snapshot can re-seed the replica)",
                        "replica durability none (no sync; the default when a snapshot can re-seed the replica, as it does if the machine goes down while it is written)"]
        var targets: [String] = []
        for (latency, replica) in zip(latencies, replicas) {
            lines += ["", "Latency of a one-row commit, from its start on the primary, \(latency.legs.count.formatted()) commits one at a time 2 ms apart, the shipper and the follower on threads of their own, \(replica)\n",
                      "| reached | p50 ms | p90 ms | p99 ms |", "|---|---:|---:|---:|"]
            for (i, name) in names.enumerated() {
                let values = latency.legs.map { $0[i] * 1_000 }
                lines.append("| \(name) | " + [0.5, 0.9, 0.99].map { String(format: "%.2f", percentile(values, $0)) }.joined(separator: " | ") + " |")
            }
            let total = latency.legs.map { $0[3] * 1_000 }
            let p50 = percentile(total, 0.5), p99 = percentile(total, 0.99)
            let durability = replica.components(separatedBy: " (").first!
            targets += ["| primary commit → replica watcher batch, \(durability), p50: at most 1 ms | \(String(format: "%.2f", p50)) ms | \(p50 <= 1 ? "yes" : "no") |",
                        "| primary commit → replica watcher batch, \(durability), p99: at most 3 ms | \(String(format: "%.2f", p99)) ms | \(p99 <= 3 ? "yes" : "no") |"]
        }
        let oneRow = rates[0]
        let shipped = Double(oneRow.commits) / oneRow.seconds
        lines += ["", "Targets\n", "| target | result | met |", "|---|---:|---|",
                  "| one-row commits shipped per second, pipelined: at least 20,000 | \(number(shipped)) | \(shipped >= 20_000 ? "yes" : "no") |"]
            + targets
        return lines
    }
}
