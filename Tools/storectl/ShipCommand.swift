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
        shipper of a store makes its journal keep records and ships the commits after it; what \
        came before reaches replicas through snapshots: compacted copies of the store in the \
        JetStream Object Store bucket <stream>-snapshots, the first taken when shipping starts \
        (unless the bucket holds one that meets the stream), more with --snapshot-every, the \
        newest --keep-snapshots kept. Snapshots are copied from one read transaction and \
        stored beside the shipping, which goes on. With --accept-writes, the shipper also \
        applies write requests that replicas send (storectl load REPLICA --nats … --stream …) \
        on the subject feedstore-writes.<stream>: each atomically, at most once per request \
        id, answered once its commit is in the stream. Progress goes to \
        stderr; the last line says which commits were published, or why none were.

        Example:
          storectl ship ./demo-store --nats nats://127.0.0.1:4222 --stream FEED
          storectl ship ./demo-store --nats nats://127.0.0.1:4222 --stream FEED --snapshot-every 10000
          storectl ship ./demo-store --nats nats://127.0.0.1:4222 --stream FEED --accept-writes
          storectl ship ./demo-store --nats nats://127.0.0.1:4222 --stream FEED --accept-writes --commit-log
        """
    )

    @Argument(help: "The store directory (opened for writing).")
    var path: String

    @OptionGroup var nats: NATSOptions

    @OptionGroup var metrics: MetricsOptions

    @OptionGroup var snapshots: SnapshotOptions

    @Option(help: "The subject to publish on (default: the stream's, or feedstore.<store id> for a new stream).")
    var subject: String?

    @Flag(help: "Apply write requests from replicas, answered once their commit is in the stream.")
    var acceptWrites = false

    @Option(help: "With --accept-writes: how many applied requests are remembered, so that a retry is answered, not applied again.")
    var rememberRequests = ForwardedWrites().rememberedRequests

    @Option(help: "With --accept-writes: for how many seconds applied requests are remembered.")
    var rememberSeconds = Int(ForwardedWrites().rememberedFor.components.seconds)

    @Flag(help: """
        Make each commit this process writes (forwarded writes, the shipper's own) durable with one sync of a commit log \
        instead of LMDB's two syncs. While it runs, other processes may only read the store.
        """)
    var commitLog = false

    @Flag(help: "Print no progress.")
    var quiet = false

    func validate() throws {
        if rememberRequests < 1 || rememberSeconds < 1 { throw ValidationError("--remember-requests and --remember-seconds take numbers of 1 or more") }
    }

    func run() throws {
        try metrics.start()
        var options = StoreOptions()
        options.keepsCommitLog = commitLog
        let store = try Store(path: path, options: options)
        defer { store.close() }
        let shipper = try JournalShipper(store: store, connection: nats.connection, stream: nats.stream, subject: subject,
                                         snapshots: snapshots.schedule, onSnapshot: ShippingRun.snapshotReporter(quiet: quiet),
                                         acceptWrites: acceptWrites ? ForwardedWrites(rememberedFor: .seconds(rememberSeconds), rememberedRequests: rememberRequests) : nil)
        let startedAfter = shipper.shippedSequence
        // Commits made before the store's first shipper are not in the stream: say so at once.
        let predating = shipper.streamSequence == 0 && startedAfter > 0
            ? snapshots.noSnapshots
                ? "; commits 1–\(startedAfter) predate this store's first shipper and are not in the stream (seed replicas from a copy: storectl compact)"
                : "; commits 1–\(startedAfter) predate this store's first shipper: replicas get them from the snapshot taken now"
            : ""
        if !quiet {
            ShippingRun.progress("shipping \(path) to stream \(nats.stream) on \(shipper.subject), after commit \(startedAfter)\(predating)")
            if acceptWrites { ShippingRun.progress("accepting write requests on feedstore-writes.\(nats.stream)") }
            try ShippingRun.reportNewestSnapshot(nats: nats, schedule: snapshots.schedule)
        }
        try ShippingRun.run(shipper, stream: nats.stream, until: nats.untilSequence, quiet: quiet, predating: predating)
    }
}
