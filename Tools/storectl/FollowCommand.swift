import ArgumentParser
import Feedstore
import FeedstoreJetStream
import Foundation

struct FollowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Apply a shipped JetStream stream to a replica store, commit by commit.",
        discussion: """
        When REPLICA is missing or empty, the follower restores the newest snapshot of the \
        bucket (<stream>-snapshots unless --bucket), chunk by chunk with its digest checked, and \
        continues with the commit after it; without a snapshot, the stream must begin with the \
        origin's first commit. A restore cut short leaves no store behind, and the next run \
        starts it over. REPLICA may also be a copy of the origin (storectl compact). Each commit \
        is applied in one transaction with the replica's position, so a follower killed at any \
        moment resumes exactly. When the stream no longer holds the commit the replica needs \
        next, --reseed replaces the replica with the newest snapshot (stop the applications \
        that read it first). A promotion record in the stream makes the follower follow the \
        promoted store. Applications open the replica read-only; only the follower writes it. \
        Progress goes to stderr.

        Examples:
          storectl follow ./replica --nats nats://127.0.0.1:4222 --stream FEED
          storectl follow ./replica --nats nats://127.0.0.1:4222 --stream FEED --reseed
        """
    )

    @Argument(help: "The replica's directory.")
    var replica: String

    @OptionGroup var nats: NATSOptions

    @OptionGroup var metrics: MetricsOptions

    @Option(help: "The replica's durability: full, relaxed or none. The stream keeps every commit: relaxed syncs each commit right after the replica's watchers see it, and after the machine went down rolls back the newest one and applies it again; none syncs nothing, and a replica the machine went down under is re-seeded from the newest snapshot. By default none when the bucket holds a snapshot, relaxed when it does not.")
    var durability: String?

    @Option(help: "The Object Store bucket of the snapshots (default <stream>-snapshots).")
    var bucket: String?

    @Flag(help: "When the stream no longer holds the commit the replica needs next, replace the replica with the newest snapshot.")
    var reseed = false

    @Flag(help: "Print no progress.")
    var quiet = false

    func run() throws {
        try metrics.start()
        let level: Durability? = try durability.map {
            guard let level = Durability(rawValue: $0) else { throw ValidationError("--durability must be full, relaxed or none, not \($0)") }
            return level
        }
        let restoreReport = LockedDate()
        let quiet = quiet
        let reportSeed: (ReplicaFollower.SeedEvent) -> Void = { event in
            guard !quiet else { return }
            switch event {
            case let .restoring(snapshot):
                ShippingRun.progress("restoring snapshot \(snapshot.name) (\(readableSize(Int(snapshot.size)))) of store \(snapshot.store.uuidString.lowercased())")
            case let .fetched(done, total):
                if restoreReport.elapsed() >= 1 || done == total { ShippingRun.progress("restore: fetched \(readableSize(Int(done))) of \(readableSize(Int(total)))") }
            case let .restored(snapshot): ShippingRun.progress("restored \(snapshot.name), digest checked")
            case .startingEmpty: ShippingRun.progress("no snapshot: starting from an empty store, the stream holds the origin's first commit")
            }
        }
        let follower = try level.map {
            try ReplicaFollower(path: replica, connection: nats.connection, stream: nats.stream, durability: $0, bucket: bucket, reseed: reseed, onSeed: reportSeed)
        } ?? ReplicaFollower(path: replica, connection: nats.connection, stream: nats.stream, bucket: bucket, reseed: reseed, onSeed: reportSeed)
        defer { follower.replica.close() }
        let applied = { follower.state?.originSequence ?? 0 }
        /// What the replica waits for: the commits the stream holds past it, or the next one.
        func waiting() throws -> String {
            let lag = try follower.lag()
            guard lag.commits > 0 else { return "waiting for commit \(applied() + 1), which the stream does not hold yet" }
            let age = lag.milliseconds.map { String(format: ", the last applied made %.0f ms ago", $0) } ?? ""
            return "\(lag.commits.formatted()) commits behind the stream\(age)"
        }
        if !quiet {
            Output.diagnostic("following stream \(nats.stream) into \(replica) (durability \(follower.durability.rawValue)), after commit \(applied()); \(try waiting())\n")
        }
        var lastReport = Date()
        try follower.run(untilOriginSequence: nats.untilSequence) {
            if !quiet, Date().timeIntervalSince(lastReport) >= 1 {
                let status = (try? waiting()) ?? "the server does not answer"
                Output.diagnostic("applied through commit \(applied()); \(status)\n")
                lastReport = Date()
            }
            return true
        }
        Output.line("applied through commit \(applied())")
    }
}
