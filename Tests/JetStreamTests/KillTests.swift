import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// `storectl ship` and `storectl follow` killed with SIGKILL at random moments, and the server
/// restarted, while commits keep coming: the stream ends with every commit once, in order, and
/// the replica equal to the primary.
@Suite(.serialized, .blocking) struct KillTests {
    static let stream = ShipperTests.stream

    /// Runs `storectl` with `arguments` for a random time within `seconds` (or until it exits, or
    /// until `condition` holds), then kills it; true when it was still running.
    static func runThenKill(_ arguments: [String], within seconds: ClosedRange<Double> = 0.05...0.4, rng: inout SeededGenerator,
                            when condition: () -> Bool = { false }) throws -> Bool {
        let tool = try RunningTool(storectlURL, arguments)
        let deadline = Date().addingTimeInterval(Double.random(in: seconds, using: &rng))
        while Date() < deadline, tool.isRunning, !condition() { usleep(1_000) }
        let killed = tool.isRunning
        tool.kill()
        _ = tool.finish(timeout: 10)
        return killed
    }

    @Test(arguments: testSeeds(1, base: 101))
    func aShipperKilledTwentyTimesLeavesEveryCommitOnceInTheStream(seed: UInt64) async throws {
        try await onOwnThread { try self.aShipperKilledTwentyTimesLeavesEveryCommitOnceInTheStreamOnItsThread(seed: seed) }
    }

    /// The body of ``aShipperKilledTwentyTimesLeavesEveryCommitOnceInTheStream(seed:)``, on a thread of its own (``onOwnThread(_:)``).
    func aShipperKilledTwentyTimesLeavesEveryCommitOnceInTheStreamOnItsThread(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir)
            let path = dir + "/primary"
            let primary = try ShipperTests.openStore(path)
            // A cursor that reads nothing keeps the whole journal, to compare the stream with.
            _ = try primary.journalCursor(named: "test", start: .oldest)
            // The first shipper makes the journal keep records; the commits after it are shipped.
            let start = try JournalShipper(store: primary, connection: JetStreamConnection(url: server.url), stream: Self.stream).shippedSequence + 1
            let total: UInt64 = 10_000
            // Commits keep coming from this process while shippers run and die (a write that
            // changes nothing makes no commit, so the writer counts the journal's).
            let failure = Locked<(any Error)?>(nil)
            let written = Locked(false)
            let writer = Thread {
                var rng = SeededGenerator(seed: seed &+ 1)
                do {
                    var made = 0
                    while try primary.read({ try $0.journalBounds().last }) < start + total - 1 {
                        try ShipperTests.commit(primary, 1, rng: &rng)
                        made += 1
                        if made % 100 == 0 { usleep(5_000) }
                    }
                } catch {
                    failure.withLock { $0 = error }
                }
                written.withLock { $0 = true }
            }
            writer.start()
            var kills = 0, runs = 0, restarts = 0
            while kills < 20 && runs < 200 {
                runs += 1
                // The server restarts twice, between shippers.
                if (kills >= 7 && restarts == 0) || (kills >= 14 && restarts == 1) {
                    server.stop()
                    try server.start()
                    restarts += 1
                }
                if try Self.runThenKill(["ship", path, "--nats", server.url, "--stream", Self.stream, "--quiet"], rng: &rng) { kills += 1 }
            }
            print("shipper killed \(kills) times in \(runs) runs, server restarted \(restarts) times")
            #expect(kills == 20 && restarts == 2, "seed \(seed): the shipper kept exiting on its own")
            while !written.current { usleep(10_000) }
            if let error = failure.current { throw error }
            let last = try primary.read { try $0.journalBounds().last }
            let finished = try runTool(storectlURL, ["ship", path, "--nats", server.url, "--stream", Self.stream, "--until-sequence", String(last), "--quiet"],
                                       timeout: 120)
            #expect(finished.status == 0, "seed \(seed): \(finished.stderr)")
            try ShipperTests.expectStreamHoldsJournal(server, store: primary, from: start, seed: seed)
        }
    }

    @Test(arguments: testSeeds(1, base: 201))
    func aFollowerKilledTwentyTimesEndsWithTheReplicaEqualToThePrimary(seed: UInt64) async throws {
        try await onOwnThread { try self.aFollowerKilledTwentyTimesEndsWithTheReplicaEqualToThePrimaryOnItsThread(seed: seed) }
    }

    /// The body of ``aFollowerKilledTwentyTimesEndsWithTheReplicaEqualToThePrimary(seed:)``, on a thread of its own (``onOwnThread(_:)``).
    func aFollowerKilledTwentyTimesEndsWithTheReplicaEqualToThePrimaryOnItsThread(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let (server, _, primary, shipper) = try ShipperTests.startPrimary(in: dir, keepingJournal: true)
            try ShipperTests.commit(primary, 50, rng: &rng)
            let first = try primary.read { try $0.journalBounds().last }
            try shipper.run(until: first)
            let replica = dir + "/replica"
            // A first follower makes the replica, so that an application can watch it.
            let made = try runTool(storectlURL, ["follow", replica, "--nats", server.url, "--stream", Self.stream, "--until-sequence", String(first), "--quiet"],
                                   timeout: 60)
            try #require(made.status == 0, "seed \(seed): \(made.stderr)")
            let reader = try Store(path: replica, options: StoreOptions(readOnly: true))
            let query = Query(Item.self, index: "byGroupScore")
            let watcher = reader.watch(query)
            var mirror = SectionedMirror<Item>()
            try mirror.apply(try #require(try watcher.next(timeout: 5)))

            // Commits keep coming and shipping while followers run and die.
            var kills = 0, runs = 0, midway = 0
            while kills < 20 && runs < 200 {
                runs += 1
                // Every other run has more commits waiting than one of the follower's write
                // transactions takes, and is killed as soon as the replica shows the first of
                // them applied (or at its random time): a kill between two of its writes, however
                // fast the machine is.
                let betweenWrites = runs % 2 == 0
                let count = betweenWrites ? Int.random(in: 600...1_200, using: &rng) : Int.random(in: 50...400, using: &rng)
                let before = try reader.read({ try $0.replicaState() })?.originSequence ?? 0
                try ShipperTests.commit(primary, count, rng: &rng)
                let shipped = try primary.read { try $0.journalBounds().last }
                try shipper.run(until: shipped)
                let killed = try Self.runThenKill(["follow", replica, "--nats", server.url, "--stream", Self.stream, "--quiet", "--durability", "none"],
                                                  within: 0.02...0.25, rng: &rng, when: {
                    guard betweenWrites, let applied = try? reader.read({ try $0.replicaState() })?.originSequence else { return false }
                    return applied > before
                })
                if killed {
                    kills += 1
                    if try reader.read({ try $0.replicaState() })?.originSequence ?? 0 < shipped { midway += 1 }
                }
                while let batch = try watcher.next(timeout: 0.01) { try mirror.apply(batch) }
            }
            print("follower killed \(kills) times in \(runs) runs, \(midway) of them with commits left to apply")
            #expect(kills == 20 && midway > 0, "seed \(seed)")
            let last = try primary.read { try $0.journalBounds().last }
            let finished = try runTool(storectlURL, ["follow", replica, "--nats", server.url, "--stream", Self.stream, "--until-sequence", String(last), "--quiet"],
                                       timeout: 120)
            #expect(finished.status == 0, "seed \(seed): \(finished.stderr)")
            try FollowerTests.expectReplicaEqualsPrimary(primary, reader, "seed \(seed)")
            // storectl dump prints the same for every entity and index.
            for (name, entity) in try primary.catalog.entities {
                for index in [nil] + entity.indexes.map(\.definition.name) {
                    let arguments = ["--entity", name, "--format", "jsonl"] + (index.map { ["--index", $0] } ?? [])
                    let fromPrimary = try runTool(storectlURL, ["dump", dir + "/primary"] + arguments)
                    let fromReplica = try runTool(storectlURL, ["dump", replica] + arguments)
                    #expect(fromPrimary.status == 0 && fromReplica.stdout == fromPrimary.stdout,
                            "\(name) by \(index ?? "id"), seed \(seed): \(fromPrimary.stderr) \(fromReplica.stderr)")
                }
            }
            // inspect shows the replica's origin and applied commit, and the shipper's cursor.
            let replicaReport = try runTool(storectlURL, ["inspect", replica, "--json"])
            let replicaInspection = try JSONDecoder().decode(StoreInspection.self, from: Data(replicaReport.stdout.utf8))
            #expect(replicaInspection.replica?.origin == shipper.storeIdentifier.uuidString.lowercased(), "seed \(seed)")
            #expect(replicaInspection.replica?.originSequence == last, "seed \(seed)")
            let primaryReport = try runTool(storectlURL, ["inspect", dir + "/primary", "--json"])
            let primaryInspection = try JSONDecoder().decode(StoreInspection.self, from: Data(primaryReport.stdout.utf8))
            #expect(primaryInspection.identifier == shipper.storeIdentifier.uuidString.lowercased())
            let cursor = primaryInspection.journal.cursors.first { $0.name == "jetstream:\(Self.stream)" }
            #expect(cursor?.sequence == last && cursor?.lag == 0, "seed \(seed)")
            let readable = try runTool(storectlURL, ["inspect", replica]).stdout
            #expect(readable.contains("replica of \(shipper.storeIdentifier.uuidString.lowercased()): applied its commit \(last)"), "\(readable)")

            // The watcher ends equal to a fresh query.
            while watcher.sequence < last, let batch = try watcher.next(timeout: 5) { try mirror.apply(batch) }
            let fresh = try reader.read { try $0.objects(in: query) }
            #expect(mirror.rows.count == fresh.count && mirror.rows.map(\.id) == fresh.map(\.id), "seed \(seed)")
            watcher.cancel()
        }
    }
}
