import ArgumentParser
import Feedstore
import FeedstoreJetStream
import Foundation

struct ShipCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ship",
        abstract: "Publish a store's journal to a NATS JetStream stream, one message per commit, exactly once.",
        discussion: """
        The stream is created when it does not exist. Each commit becomes one JSON envelope on \
        the subject feedstore.<store id>, with Nats-Msg-Id <store id>:<sequence>; the shipper's \
        durable journal cursor (jetstream:<stream>) moves once the server has acknowledged. \
        Killed at any moment, the next run continues after the stream's last commit. The first \
        shipper of a store makes its journal keep records and ships the commits after it: seed \
        replicas from a copy (storectl compact) for what came before, which the first run names. \
        Progress goes to stderr; the last line says which commits were published, or why none \
        were.

        Example:
          storectl ship ./demo-store --nats nats://127.0.0.1:4222 --stream FEED
        """
    )

    @Argument(help: "The store directory (opened for writing).")
    var path: String

    @OptionGroup var nats: NATSOptions

    @Option(help: "The subject to publish on (default feedstore.<store id>).")
    var subject: String?

    @Flag(help: "Print no progress.")
    var quiet = false

    func run() throws {
        let store = try Store(path: path)
        defer { store.close() }
        let shipper = try JournalShipper(store: store, connection: nats.connection, stream: nats.stream, subject: subject)
        let startedAfter = shipper.shippedSequence
        // Commits made before the store's first shipper are not in the stream: say so at once.
        let predating = shipper.streamSequence == 0 && startedAfter > 0
            ? "; commits 1–\(startedAfter) predate this store's first shipper and are not in the stream (seed replicas from a copy: storectl compact)"
            : ""
        if !quiet {
            FileHandle.standardError.write(Data("shipping \(path) to stream \(nats.stream) on \(shipper.subject), after commit \(startedAfter)\(predating)\n".utf8))
        }
        var reported = shipper.shippedSequence
        var lastReport = Date()
        try shipper.run(until: nats.untilSequence, while: {
            if !quiet, shipper.shippedSequence != reported, Date().timeIntervalSince(lastReport) >= 1 {
                FileHandle.standardError.write(Data("shipped through commit \(shipper.shippedSequence)\n".utf8))
                (reported, lastReport) = (shipper.shippedSequence, Date())
            }
            return true
        }, onOutage: { error in
            FileHandle.standardError.write(Data("\(error); reconnecting\n".utf8))
        })
        let shipped = shipper.shippedSequence
        if shipped > startedAfter {
            Output.line("shipped commits \(startedAfter + 1)–\(shipped) (\((shipped - startedAfter).formatted()) commits) to stream \(nats.stream)")
        } else if shipper.streamSequence == 0 {
            Output.line("nothing to publish: no commit was made since shipping began\(predating)")
        } else {
            Output.line("nothing to publish: stream \(nats.stream) already holds every commit through \(shipped)")
        }
    }
}
