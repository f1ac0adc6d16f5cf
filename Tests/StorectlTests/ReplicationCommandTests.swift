import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// `storectl ship`, `follow` and `promote` as an operator runs them, against a real
/// `nats-server -js`, with processes killed as a supervisor or a crash would.
@Suite(.serialized, .blocking) struct ReplicationCommandTests {
    static let stream = "FEED"

    /// A real server and a synced demo store at `dir/primary` of `messages` messages from a feed
    /// of `seed` (which goes on making the store's next changes), with the options that name the
    /// server and the stream.
    static func primary(in dir: String, seed: UInt64, messages: Int, contacts: Int)
        throws -> (server: NATSServer, nats: [String], primary: Store, feed: DemoFeed)
    {
        let server = try NATSServer(directory: dir + "/nats")
        var feed = DemoFeed(seed: seed)
        let primary = try populatedDemoStore(at: dir + "/primary", feed: &feed, messages: messages, contacts: contacts)
        try primary.sync()
        return (server, ["--nats", server.url, "--stream", stream], primary, feed)
    }

    func storectl(_ arguments: [String], timeout: TimeInterval = 120) throws -> (status: Int32, stdout: String, stderr: String) {
        try runTool(storectlURL, arguments, timeout: timeout)
    }

    /// A demo store whose history predates shipping (a million messages in the long run) is
    /// followed into an empty directory; a restore killed at random points still ends equal to
    /// the primary and verifies clean; the replica is then
    /// promoted, the old primary's `ship` is refused with its unshipped commits named, and a
    /// second replica follows the promoted store.
    @Test func followFromNothingSurvivesKillsAndPromotionTakesOver() throws {
        let seed = testSeeds(1, base: 71)[0]
        var rng = SeededGenerator(seed: seed)
        // The long run follows a million messages.
        let (messages, kills, killWindow) = TestSize.choose(quick: (30_000, 3, 400_000), long: (1_000_000, 10, 4_000_000))
        try withTemporaryDirectory { dir in
            var (server, nats, primary, feed) = try Self.primary(in: dir, seed: seed, messages: messages, contacts: 500)
            defer { server.stop() }
            let primaryPath = dir + "/primary"
            for _ in 0..<20 { _ = try primary.write { try feed.mutate($0, count: 5, contacts: 500) } }
            try primary.sync()
            let history = try primary.read { try $0.journalBounds().last }

            let shipped = try storectl(["ship", primaryPath] + nats + ["--until-sequence", String(history)])
            #expect(shipped.status == 0, "\(shipped.stderr)")
            #expect(shipped.stderr.contains("predate this store's first shipper: replicas get them from the snapshot taken now"), "\(shipped.stderr)")
            #expect(shipped.stderr.contains("snapshot commit-\(history) stored"), "\(shipped.stderr)")

            // Restores killed at random moments: none leaves a store that opens as whole.
            let replica = dir + "/replica"
            for kill in 0..<kills {
                let follow = try RunningTool(storectlURL, ["follow", replica] + nats + ["--until-sequence", String(history)])
                usleep(UInt32.random(in: 0..<UInt32(killWindow), using: &rng))
                follow.kill()
                let result = follow.finish(timeout: 30)
                // A store in place is a whole one: it opens, is a replica with its state, and
                // holds the snapshot's commits (it is verified whole once the follower is done).
                if FileManager.default.fileExists(atPath: replica + "/data.mdb") {
                    let left = try Store(path: replica, options: StoreOptions(readOnly: true))
                    defer { left.close() }
                    #expect(try left.read { try $0.replicaState() } != nil, "kill \(kill): \(result.stderr), seed \(seed)")
                    #expect(try left.read { try $0.journalBounds().last } >= history, "kill \(kill), seed \(seed)")
                }
            }
            let followed = try storectl(["follow", replica] + nats + ["--until-sequence", String(history)])
            #expect(followed.status == 0 && followed.stdout == "applied through commit \(history)\n", "\(followed.stdout) \(followed.stderr)")
            try {
                let copy = try Store(path: replica, options: StoreOptions(readOnly: true))
                defer { copy.close() }
                #expect(try storeDifference(primary, copy) == nil, "seed \(seed)")
                #expect(try copy.verify().isEmpty)
            }()

            let inspected = try storectl(["inspect", replica] + nats)
            #expect(inspected.stdout.contains("applied its commit \(history) (stream message 0), which the origin made"), "\(inspected.stdout)")
            #expect(inspected.stdout.contains("0 commits behind stream \(Self.stream)"), "\(inspected.stdout)")

            // More commits shipped, then the primary "dies" with commits it never shipped.
            for _ in 0..<10 { _ = try primary.write { try feed.mutate($0, count: 3, contacts: 500) } }
            let acknowledged = try primary.read { try $0.journalBounds().last }
            try primary.sync()
            #expect(try storectl(["ship", primaryPath] + nats + ["--until-sequence", String(acknowledged)]).status == 0)
            let behind = try storectl(["inspect", replica] + nats)
            #expect(behind.stdout.contains("10 commits behind stream \(Self.stream)"), "\(behind.stdout)")
            for _ in 0..<4 { _ = try primary.write { try feed.mutate($0, count: 3, contacts: 500) } }
            let oldLast = try primary.read { try $0.journalBounds().last }
            try primary.sync()

            let promoted = try storectl(["promote", replica] + nats + ["--until-sequence", String(acknowledged)])
            #expect(promoted.status == 0, "\(promoted.stderr)")
            #expect(promoted.stdout.contains("now ships to stream \(Self.stream) after commit \(acknowledged)"), "\(promoted.stdout)")

            let refused = try storectl(["ship", primaryPath] + nats + ["--until-sequence", String(oldLast)])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("another store now ships to stream \(Self.stream)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("\(oldLast - acknowledged) commits \(acknowledged + 1)–\(oldLast) never reached the stream"), "\(refused.stderr)")

            // The promoted store takes writes and ships them; a second replica follows it.
            let newPrimary = try Store(path: replica, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
            #expect(!newPrimary.isReadOnly)
            for _ in 0..<10 { _ = try newPrimary.write { try feed.mutate($0, count: 3, contacts: 500) } }
            let last = try newPrimary.read { try $0.journalBounds().last }
            try newPrimary.sync()
            #expect(try storectl(["ship", replica] + nats + ["--until-sequence", String(last)]).status == 0)
            let second = dir + "/second"
            let secondFollowed = try storectl(["follow", second] + nats + ["--until-sequence", String(last)])
            #expect(secondFollowed.status == 0, "\(secondFollowed.stderr)")
            let copy = try Store(path: second, options: StoreOptions(readOnly: true))
            defer { copy.close() }
            #expect(try storeDifference(newPrimary, copy) == nil, "seed \(seed)")
            newPrimary.close()
            primary.close()
        }
    }

    /// `ship` and `follow` with `--metrics-port` serve their metrics in the Prometheus text
    /// format: a scrape shows the commits shipped and applied, and the replica's lag.
    @Test func shipAndFollowServeTheirMetricsToPrometheus() throws {
        try withTemporaryDirectory { dir in
            var (server, nats, primary, feed) = try Self.primary(in: dir, seed: 6, messages: 500, contacts: 20)
            defer { server.stop() }
            let shipPort = try NATSServer.freePort(), followPort = try NATSServer.freePort()
            let ship = try RunningTool(storectlURL, ["ship", dir + "/primary", "--metrics-port", String(shipPort)] + nats)
            defer { ship.kill() }
            #expect(ship.waitFor("snapshot commit-", timeout: 60))
            for _ in 0..<7 { _ = try primary.write { try feed.mutate($0, count: 2, contacts: 20) } }
            let last = try primary.read { try $0.journalBounds().last }
            try primary.sync()
            let follow = try RunningTool(storectlURL, ["follow", dir + "/replica", "--metrics-port", String(followPort)] + nats)
            defer { follow.kill() }
            /// Scrapes `port` until `line` is in the metrics, for up to 30 seconds.
            func scrape(_ port: Int, until line: String) -> String {
                let deadline = Date().addingTimeInterval(30)
                var body = ""
                while Date() < deadline {
                    if let answer = httpGet(port: port, path: "/metrics") {
                        #expect(answer.status == "HTTP/1.1 200 OK")
                        body = answer.body
                        if body.contains(line) { return body }
                    }
                    usleep(100_000)
                }
                return body
            }
            let shipped = scrape(shipPort, until: "feedstore_shipped_commit{stream=\"\(Self.stream)\"} \(last)")
            #expect(shipped.contains("feedstore_shipped_commit{stream=\"\(Self.stream)\"} \(last)"), "\(shipped)")
            #expect(shipped.contains("feedstore_snapshots_total{stream=\"\(Self.stream)\",outcome=\"stored\"} 1"), "\(shipped)")
            #expect(shipped.contains("# TYPE feedstore_shipped_commits_total counter"), "\(shipped)")
            let applied = scrape(followPort, until: "feedstore_applied_commit{stream=\"\(Self.stream)\"} \(last)")
            #expect(applied.contains("feedstore_applied_commit{stream=\"\(Self.stream)\"} \(last)"), "\(applied)")
            #expect(applied.contains("feedstore_restores_total{stream=\"\(Self.stream)\"} 1"), "\(applied)")
            let caughtUp = scrape(followPort, until: "feedstore_replica_lag_commits{stream=\"\(Self.stream)\"} 0")
            #expect(caughtUp.contains("feedstore_replica_lag_commits{stream=\"\(Self.stream)\"} 0"), "\(caughtUp)")
            #expect(httpGet(port: followPort, path: "/other")?.status == "HTTP/1.1 404 Not Found")
            primary.close()
        }
    }

    /// `follow` fails at once, with the way out, when it cannot reach the commit asked for:
    /// the stream lacks the history and the bucket holds no snapshot.
    @Test func followFailsAtOnceWhenTheSequenceCannotBeReached() throws {
        try withTemporaryDirectory { dir in
            var (server, nats, primary, feed) = try Self.primary(in: dir, seed: 5, messages: 200, contacts: 20)
            defer { server.stop() }
            #expect(try storectl(["ship", dir + "/primary", "--no-snapshots"] + nats + ["--until-sequence", "1"]).status == 0)
            for _ in 0..<3 { _ = try primary.write { try feed.mutate($0, count: 2, contacts: 20) } }
            let last = try primary.read { try $0.journalBounds().last }
            try primary.sync()
            #expect(try storectl(["ship", dir + "/primary", "--no-snapshots"] + nats + ["--until-sequence", String(last)]).status == 0)
            let started = Date()
            let follow = try storectl(["follow", dir + "/replica"] + nats + ["--until-sequence", String(last)], timeout: 30)
            #expect(follow.status == 2 && Date().timeIntervalSince(started) < 10)
            #expect(follow.stderr.contains("holds no snapshot") && follow.stderr.contains("the stream begins with commit"), "\(follow.stderr)")
            primary.close()
        }
    }
}
