import ArgumentParser
import Feedstore
import FeedstoreJetStream
import Foundation

struct FollowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Apply a shipped JetStream stream to a replica store, commit by commit.",
        discussion: """
        REPLICA is created empty when it does not exist (the stream must then begin with the \
        origin's first commit), or is a copy of the origin (storectl compact), which continues \
        after the copy's last commit. Each commit is applied in one transaction with the \
        replica's position, so a follower killed at any moment resumes exactly. Applications \
        open the replica read-only; only the follower writes it. Progress goes to stderr.

        Example:
          storectl follow ./replica --nats nats://127.0.0.1:4222 --stream FEED
        """
    )

    @Argument(help: "The replica's directory.")
    var replica: String

    @OptionGroup var nats: NATSOptions

    @Option(help: "The replica's durability: full, relaxed or none (the stream keeps every commit, so relaxed loses nothing a new run cannot apply again).")
    var durability: String = "relaxed"

    @Flag(help: "Print no progress.")
    var quiet = false

    func run() throws {
        let level: Durability = switch durability {
        case "full": .full
        case "relaxed": .relaxed
        case "none": .none
        default: StoreAccess.fail("unknown durability \(durability); use full, relaxed or none")
        }
        let follower = try ReplicaFollower(path: replica, connection: nats.connection, stream: nats.stream, durability: level)
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
            FileHandle.standardError.write(Data("following stream \(nats.stream) into \(replica), after commit \(applied()); \(try waiting())\n".utf8))
        }
        var lastReport = Date()
        try follower.run(untilOriginSequence: nats.untilSequence) {
            if !quiet, Date().timeIntervalSince(lastReport) >= 1 {
                let status = (try? waiting()) ?? "the server does not answer"
                FileHandle.standardError.write(Data("applied through commit \(applied()); \(status)\n".utf8))
                lastReport = Date()
            }
            return true
        }
        Output.line("applied through commit \(applied())")
    }
}
