@_spi(Replication) import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// Forwarded writes through real faults: the primary (`storectl ship --accept-writes`) killed
/// at random moments, including after applying a request and before answering it, or meeting
/// a disk that refuses a write; the NATS server restarted; a loading client (`storectl load` on
/// a replica) killed and run again with the same request ids. Every request is applied exactly
/// once, and none acknowledged is lost.
@Suite(.serialized, .blocking) struct ForwardedWriteFaultTests {
    static let stream = ForwardedWriteTests.stream

    /// A replica following the stream in this process, on a thread of its own, until ``stop()``.
    final class FollowedReplica: @unchecked Sendable {
        let replica: Store
        /// The follower's loop (what it threw, if it has: ``LoopThread/error``).
        let following: LoopThread

        /// Follows the stream into `path` once the shipper's process has made it (within 30 s).
        init(into path: String, connection: JetStreamConnection) throws {
            let deadline = Date().addingTimeInterval(30)
            var follower: ReplicaFollower?
            while follower == nil, Date() < deadline {
                follower = try? ReplicaFollower(path: path, connection: connection, stream: ForwardedWriteFaultTests.stream)
                if follower == nil { Thread.sleep(forTimeInterval: 0.05) }
            }
            nonisolated(unsafe) let made = try #require(follower, "the shipper made the stream")
            replica = made.replica
            following = LoopThread { try made.run(while: $0) }
        }

        /// Stops following, then closes the replica.
        func stop() {
            following.stop()
            replica.close()
        }
    }

    /// Whether a call that threw `error` is sent again with the same id: its outcome is unknown,
    /// no primary answered, or the replica had not applied the commit yet.
    static func sendsAgain(_ error: JetStreamError) -> Bool {
        if case .replicaBehind = error { return true }
        return error.isTransient
    }

    /// Requests of the stream's envelopes: each id with the ids of the records its commit holds.
    static func requestsInStream(_ server: NATSServer) throws -> [(id: String, records: [FieldValue])] {
        try ShipperTests.streamMessages(server).flatMap { message -> [(id: String, records: [FieldValue])] in
            let envelope = try ChangeEnvelope.decode(message.data, streamSequence: message.streamSequence)
            return envelope.requests.map { ($0.id, envelope.entries.map(\.id)) }
        }
    }

    /// A client inserts records one request each, retrying every unknown outcome with the same
    /// id, while the primary's process is killed and restarted and the server restarts: each
    /// insert is in the stream once (a second application would be refused as a duplicate and
    /// reach the client), and the replica holds every acknowledged one.
    @Test(arguments: testSeeds(1, base: 401))
    func everyRequestIsAppliedOnceThroughKillsAndRestarts(seed: UInt64) throws {
        let (requests, faults) = TestSize.choose(quick: (1_500, 8), long: (8_000, 40))
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            try ShipperTests.openStore(dir + "/primary").close()
            let ship = ["ship", dir + "/primary", "--nats", server.url, "--stream", Self.stream, "--accept-writes", "--no-snapshots", "--quiet"]
            var primary = try RunningTool(storectlURL, ship)
            // `storectl ship` exits when the server is unavailable as it starts (a server
            // restart can meet a primary starting): the test starts it again, as a supervisor
            // would, and keeps why it exited.
            var exits: [String] = []
            func restartPrimaryIfExited() throws {
                guard !primary.isRunning else { return }
                let output = primary.finish(timeout: 30)
                exits.append("status \(output.status): \(output.stderr.suffix(300))")
                primary = try RunningTool(storectlURL, ship)
            }
            // The replica follows in this process, through every fault.
            let replica = try FollowedReplica(into: dir + "/replica", connection: connection)
            defer { replica.stop() }
            let writer = try ReplicaWriter(replica: replica.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(300))

            let failures = Locked<[String]>([])
            // The client writes at least `requests`, and goes on until the faults are over, so
            // that every fault meets it writing however fast the machine is.
            let done = Locked(0), finished = Locked(false), retries = Locked(0), faultsOver = Locked(false)
            let lastRetried = Locked("")  // what the last call sent again failed with, for a stalled client's report
            let client = Thread {
                var k = 0
                while k < requests || (!faultsOver.current && k < requests * 10) {
                    defer { k += 1 }
                    while true {
                        do {
                            try writer.writeBlocking([ForwardedWriteTests.item(Int64(k))], requestID: "insert-\(k)", timeout: .milliseconds(700))
                            break
                        } catch let error as JetStreamError where Self.sendsAgain(error) {
                            retries.withLock { $0 += 1 }
                            lastRetried.withLock { $0 = "request \(k): \(error)" }
                            continue
                        } catch {
                            failures.withLock { $0.append("request \(k): \(error)") }
                            break
                        }
                    }
                    done.withLock { $0 = k + 1 }
                }
                finished.withLock { $0 = true }
            }
            client.start()
            var rng = SeededGenerator(seed: seed)
            var duringRequests = 0
            for fault in 0..<faults {
                if !finished.current { duringRequests += 1 }
                Thread.sleep(forTimeInterval: Double.random(in: 0.05...0.3, using: &rng))
                try restartPrimaryIfExited()
                if fault % 4 == 3 {
                    server.stop()
                    Thread.sleep(forTimeInterval: 0.2)
                    try server.start()
                } else {
                    primary.kill()
                    _ = primary.finish(timeout: 30)
                    // Some outages outlast a call's timeout: the caller then sends it again.
                    Thread.sleep(forTimeInterval: fault % 2 == 0 ? Double.random(in: 0...0.2, using: &rng) : 1)
                    primary = try RunningTool(storectlURL, ship)
                }
            }
            faultsOver.withLock { $0 = true }
            // The client's pace depends on what else the machine runs; it fails only if it stops
            // making progress for a minute.
            var lastProgress = (count: done.current, at: Date())
            while !finished.current, Date().timeIntervalSince(lastProgress.at) < 60 {
                Thread.sleep(forTimeInterval: 0.05)
                try restartPrimaryIfExited()
                if done.current != lastProgress.count { lastProgress = (done.current, Date()) }
            }
            primary.kill()
            let primaryOutput = primary.finish(timeout: 30)
            print("forwarded writes through faults: \(done.current) requests, \(retries.current) calls sent again, the primary exited on its own \(exits.count) times, seed \(seed)")
            #expect(replica.following.error == nil, "\(String(describing: replica.following.error)), seed \(seed)")
            #expect(finished.current, """
                the client finished, \(done.current) of \(requests) requests, seed \(seed); \
                last retried: \(lastRetried.current); the primary's output: \(primaryOutput.stderr.suffix(2_000))
                """)
            // The primary exits on its own only when it cannot reach the server as it starts (a
            // server shutting down or starting can also end the handshake: "Protocol Error").
            #expect(exits.allSatisfy { ["NATS is unavailable", "NATS did not answer in time", "cannot connect to NATS"].contains(where: $0.contains) },
                    "the primary exited: \(exits), seed \(seed)")
            #expect(failures.current.isEmpty, "\(failures.current.prefix(5)), seed \(seed)")
            #expect(duringRequests == faults && retries.current > 0, "\(duringRequests) faults while the client wrote, \(retries.current) calls failed and were sent again, seed \(seed)")

            // Each request is in the stream once, with its record.
            let written = done.current
            let shipped = try Self.requestsInStream(server)
            let byID = Dictionary(grouping: shipped, by: \.id)
            #expect(shipped.count == written && byID.count == written, "\(shipped.count) requests in the stream for \(written), seed \(seed)")
            #expect(byID.allSatisfy { id, found in found.count == 1 && found[0].records == [.int(Int64(id.dropFirst("insert-".count))!)] },
                    "seed \(seed)")
            let store = try Store(path: dir + "/primary", options: StoreOptions(readOnly: true))
            defer { store.close() }
            #expect(try store.read { try $0.count(entity: "Item") } == written)
            #expect(try replica.replica.read { try $0.count(entity: "Item") } == written, "every acknowledged write is on the replica")
        }
    }

    /// The primary's disk refuses the write of a commit's meta page: LMDB stops in that process,
    /// so `storectl ship` exits with the error that says so rather than staying up unable to
    /// write, and is started again, as a supervisor would. A client sending each request again
    /// with its id (the primary answers the one it could not apply as not applied) has each
    /// applied once, and the replica holds every one.
    @Test func aPrimaryWhoseDiskRefusesAMetaPageExitsAndEachWriteIsAppliedOnce() throws {
        let requests = 60
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            try ShipperTests.openStore(dir + "/primary").close()
            let injector = try buildPreloadLibrary("Tools/fault-injector/faults.c", named: "feedstore-faults", in: dir)
            let ship = ["ship", dir + "/primary", "--nats", server.url, "--stream", Self.stream, "--accept-writes", "--no-snapshots", "--quiet"]
            let failing = try RunningTool(storectlURL, ship, environment: ["LD_PRELOAD": injector, "FEEDSTORE_FAULT": "meta-write:20"])
            let replica = try FollowedReplica(into: dir + "/replica", connection: connection)
            defer { replica.stop() }
            let writer = try ReplicaWriter(replica: replica.replica, connection: connection, stream: Self.stream, attemptTimeout: .milliseconds(300))
            var restarted: RunningTool?
            defer {
                restarted?.kill()
                _ = restarted?.finish(timeout: 30)
            }
            var notApplied: [String] = []
            let deadline = Date().addingTimeInterval(120)
            for k in 0..<requests {
                while Date() < deadline {
                    if restarted == nil, !failing.isRunning { restarted = try RunningTool(storectlURL, ship) }
                    do {
                        try writer.writeBlocking([ForwardedWriteTests.item(Int64(k))], requestID: "insert-\(k)", timeout: .seconds(2))
                        break
                    } catch let error as JetStreamError where Self.sendsAgain(error) {
                        continue
                    } catch let JetStreamError.writeNotApplied(_, _, reason) {
                        notApplied.append(reason)
                    }
                }
            }
            let exit = failing.finish(timeout: 30)
            print("a primary whose disk refused a meta page: exited with status \(exit.status); \(notApplied.count) requests answered not applied and sent again")
            #expect(restarted != nil, "the primary whose disk failed went on running: \(exit.stderr.suffix(1_000))")
            #expect(exit.stderr.contains("feedstore-fault: a write to data.mdb fails"), "the fault did not come: \(exit.stderr.suffix(1_000))")
            #expect(exit.status != 0 && exit.stderr.contains("close every handle of the store in this process and open it again"),
                    "status \(exit.status): \(exit.stderr.suffix(1_000))")
            #expect(!notApplied.isEmpty && notApplied.allSatisfy { $0.contains("the primary could not apply it") }, "\(notApplied)")
            #expect(replica.following.error == nil, "\(String(describing: replica.following.error))")
            let shipped = try Self.requestsInStream(server)
            #expect(shipped.count == requests && Set(shipped.map(\.id)) == Set((0..<requests).map { "insert-\($0)" }),
                    "\(shipped.count) requests in the stream for \(requests)")
            #expect(try replica.replica.read { try $0.count(entity: "Item") } == requests, "every acknowledged write is on the replica")
        }
    }

    /// `storectl load` through a replica, killed at random moments and run again with the same
    /// request prefix: the primary applies each transaction once, and the replica ends with
    /// every record.
    @Test(arguments: testSeeds(1, base: 411))
    func aLoadKilledAndRunAgainAppliesEachTransactionOnce(seed: UInt64) throws {
        let (records, kills) = TestSize.choose(quick: (2_000, 3), long: (10_000, 10))
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let connection = JetStreamConnection(url: server.url)
            try ShipperTests.openStore(dir + "/primary").close()
            let nats = ["--nats", server.url, "--stream", Self.stream]
            let primary = try RunningTool(storectlURL, ["ship", dir + "/primary", "--accept-writes", "--no-snapshots", "--quiet"] + nats)
            defer {
                primary.kill()
                _ = primary.finish(timeout: 30)
            }
            let replica = try FollowedReplica(into: dir + "/replica", connection: connection)
            defer { replica.stop() }
            let input = dir + "/items.jsonl"
            let lines: [String] = (0..<records).map { k in
                let item = Item(id: Int64(k), group: Int64(k % 7), score: Double(k), name: "load \(k)", flag: k % 3 == 0, tag: nil)
                return FieldValue.object(item.fields).jsonText
            }
            try lines.joined(separator: "\n").write(toFile: input, atomically: true, encoding: .utf8)
            let load = ["load", dir + "/replica", "--entity", "Item", "--input", input, "--batch", "10", "--request-prefix", "items"] + nats
            var rng = SeededGenerator(seed: seed)
            var interrupted = 0
            for _ in 0..<kills {
                let running = try RunningTool(storectlURL, load)
                Thread.sleep(forTimeInterval: Double.random(in: 0.1...0.4, using: &rng))
                if running.isRunning { interrupted += 1 }
                running.kill()
                _ = running.finish(timeout: 30)
            }
            #expect(interrupted > 0, "a kill interrupted a load, seed \(seed)")
            let finished = try runTool(storectlURL, load, timeout: 300)
            #expect(finished.status == 0, "\(finished.stderr), seed \(seed)")
            #expect(finished.stdout.contains("loaded \(records.formatted()) Item records through the primary of stream \(Self.stream)"), "\(finished.stdout)")

            // Each transaction (10 lines) is one request, in the stream once, with its records.
            let shipped = try Self.requestsInStream(server)
            #expect(shipped.count == records / 10 && Set(shipped.map(\.id)).count == records / 10, "\(shipped.count) requests, seed \(seed)")
            #expect(shipped.allSatisfy { $0.records.count == 10 }, "seed \(seed)")
            #expect(try replica.replica.read { try $0.count(entity: "Item") } == records)
        }
    }
}
