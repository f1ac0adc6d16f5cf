import ArgumentParser
import Feedstore
import FeedstoreJetStream
import Foundation

struct PromoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promote",
        abstract: "Make a replica the primary in its origin's place, then ship it on the same stream.",
        discussion: """
        The replica first applies every commit the stream holds. It then publishes a promotion \
        record that the stream stores only if its last message is still the replica's last \
        commit (Nats-Expected-Last-Sequence), so no commit the stream acknowledged is lost and \
        one store ships at a time; if the old primary shipped meanwhile, those commits are \
        applied and the record tried again. The record tells the other replicas to follow the \
        promoted store. The old primary's shipper is refused from then on, naming its commits \
        that never reached the stream; it can rejoin only as a replica from a snapshot. The \
        promoted store then ships like storectl ship, taking a snapshot first. Stop the \
        replica's follower before promoting, and reopen the applications' handles afterwards \
        (those opened on the replica stay read-only). Running promote again after a crash \
        finishes the same promotion.

        Example:
          storectl promote ./replica --nats nats://127.0.0.1:4222 --stream FEED
        """
    )

    @Argument(help: "The replica's directory.")
    var replica: String

    @OptionGroup var nats: NATSOptions

    @OptionGroup var metrics: MetricsOptions

    @OptionGroup var snapshots: SnapshotOptions

    @Flag(help: "Print no progress.")
    var quiet = false

    func run() throws {
        try metrics.start()
        let started = ContinuousClock.now
        let promoted: Store
        if FileManager.default.fileExists(atPath: replica + "/data.mdb"),
           try Store(path: replica, options: StoreOptions(readOnly: true)).read({ try $0.replicaState() == nil && $0.journalBounds().last > 0 })
        {
            // Promoted already (a run that stopped after the promotion): ship it.
            if !quiet { ShippingRun.progress("\(replica) is no replica but a store of its own, promoted already: shipping it") }
            promoted = try Store(path: replica)
        } else {
            let follower = try ReplicaFollower(path: replica, connection: nats.connection, stream: nats.stream, durability: .full,
                                               bucket: snapshots.bucket)
            if !quiet {
                ShippingRun.progress("promoting \(replica), which has applied commit \(follower.state?.originSequence ?? 0) of store \(follower.state?.origin.uuidString.lowercased() ?? "none")")
            }
            promoted = try follower.promote()
        }
        defer { promoted.close() }
        let shipper = try JournalShipper(store: promoted, connection: nats.connection, stream: nats.stream,
                                         snapshots: snapshots.schedule, onSnapshot: ShippingRun.snapshotReporter(quiet: quiet))
        let identifier = try promoted.read { try $0.storeIdentifier() }?.uuidString.lowercased() ?? ""
        let elapsed = ContinuousClock.now - started
        if !quiet { try ShippingRun.reportNewestSnapshot(nats: nats, schedule: snapshots.schedule) }
        Output.line("promoted \(replica): store \(identifier) now ships to stream \(nats.stream) after commit \(shipper.shippedSequence) (\(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .narrow))))")
        // Shipping goes on until stopped: the promotion is news now.
        Output.flush()
        try ShippingRun.run(shipper, stream: nats.stream, until: nats.untilSequence, quiet: quiet, predating: "")
    }
}
