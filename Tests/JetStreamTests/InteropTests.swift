import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// A client that is not Feedstore's reads what Feedstore writes: nats-py (PyPI) lists the
/// snapshot bucket with its own Object Store, fetches the newest snapshot with the digest
/// checked, and reads every envelope of the stream.
@Suite(.serialized, .blocking) struct InteropTests {
    static let stream = ShipperTests.stream
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/nats_py_reads_replication.py").path

    @Test func natsPyReadsTheBucketAndTheStream() throws {
        var rng = SeededGenerator(seed: 81)
        try withTemporaryDirectory { dir in
            let (server, connection, primary) = try SnapshotTests.primaryWithHistory(in: dir, commits: 120, rng: &rng)
            defer { server.stop() }
            let shipper = try JournalShipper(store: primary, connection: connection, stream: Self.stream)
            let history = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: history)
            // The primary as the first snapshot holds it, for comparison.
            try primary.copy(to: dir + "/at-snapshot", compact: true)
            try ShipperTests.commit(primary, 40, rng: &rng)
            let last = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: last)
            let ours = try #require(try SnapshotBucket(connection: connection, name: SnapshotBucket.defaultName(forStream: Self.stream)).snapshots().last)

            try FileManager.default.createDirectory(atPath: dir + "/fetched", withIntermediateDirectories: false)
            let run = try runTool(URL(fileURLWithPath: "/usr/bin/env"),
                                  ["python3", Self.script, server.url, Self.stream, SnapshotBucket.defaultName(forStream: Self.stream),
                                   dir + "/fetched/data.mdb"], timeout: 120)
            try #require(run.status == 0, "nats-py: \(run.stderr)")
            let report = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
            let snapshot = try #require(report["snapshot"] as? [String: Any])
            #expect((report["objects"] as? [String]) == [ours.name])
            #expect(snapshot["name"] as? String == ours.name && snapshot["commit"] as? Int == Int(ours.commit))
            #expect(snapshot["store"] as? String == primary.identifierText)
            #expect(snapshot["size"] as? Int == Int(ours.size) && snapshot["described"] as? Int == Int(ours.size))
            // hashlib's digest of the bytes nats-py fetched is the one Feedstore described.
            #expect(snapshot["digest"] as? String == ours.digest && snapshot["describedDigest"] as? String == ours.digest)
            // What nats-py fetched is the store as of the snapshot's commit.
            let fetched = try Store(path: dir + "/fetched", options: StoreOptions(readOnly: true))
            defer { fetched.close() }
            let atSnapshot = try Store(path: dir + "/at-snapshot", options: StoreOptions(readOnly: true))
            defer { atSnapshot.close() }
            #expect(try fetched.read { try $0.journalBounds().last } == ours.commit)
            #expect(try storeDifference(fetched, atSnapshot) == nil)

            // Every envelope, as nats-py decoded it, is the journal's commit.
            let envelopes = try #require(report["envelopes"] as? [[String: Any]])
            let commits = try primary.read { try $0.journal(after: history, limit: Int(last - history)) }
            #expect(envelopes.count == commits.count)
            for (envelope, commit) in zip(envelopes, commits) {
                #expect(envelope["id"] as? String == "\(primary.identifierText):\(commit.sequence)")
                #expect(envelope["store"] as? String == primary.identifierText && envelope["sequence"] as? Int == Int(commit.sequence))
                #expect(envelope["entries"] as? Int == commit.entries.count, "commit \(commit.sequence)")
                #expect(envelope["entities"] as? [String] == Set(commit.entries.map(\.entity)).sorted())
            }
        }
    }
}

private extension Store {
    /// The store's identifier as envelopes and snapshots write it.
    var identifierText: String { ((try? read { try $0.storeIdentifier() }) ?? nil)?.uuidString.lowercased() ?? "" }
}
