import Feedstore
import FeedstoreJetStream
import Foundation

/// Ships a store until stopped or through a sequence, with progress on stderr and a last line
/// that says what was published: what `ship` does, and `promote` once the replica is promoted.
enum ShippingRun {
    /// Progress lines of the shipper's snapshots, from their thread.
    static func snapshotReporter(quiet: Bool) -> @Sendable (SnapshotEvent) -> Void {
        let lastReport = LockedDate()
        return { event in
            guard !quiet else { return }
            switch event {
            case .started: progress("snapshot: copying the store")
            case let .stored(done, total):
                if lastReport.elapsed() >= 1 || done == total {
                    progress("snapshot: stored \(readableSize(Int(done))) of \(readableSize(Int(total)))")
                }
            case let .finished(snapshot):
                progress("snapshot \(snapshot.name) stored (\(readableSize(Int(snapshot.size))), \(snapshot.digest))")
            case let .failed(error): progress("snapshot failed: \(error); the next is tried in a minute")
            }
        }
    }

    static func run(_ shipper: JournalShipper, stream: String, until: UInt64?, quiet: Bool, predating: String) throws {
        let startedAfter = shipper.shippedSequence
        var reported = shipper.shippedSequence
        var lastReport = Date()
        try shipper.run(until: until, while: {
            if !quiet, shipper.shippedSequence != reported, Date().timeIntervalSince(lastReport) >= 1 {
                progress("shipped through commit \(shipper.shippedSequence)")
                (reported, lastReport) = (shipper.shippedSequence, Date())
            }
            return true
        }, onOutage: { error in
            progress("\(error); reconnecting")
        })
        let shipped = shipper.shippedSequence
        if shipped > startedAfter {
            Output.line("shipped commits \(startedAfter + 1)–\(shipped) (\((shipped - startedAfter).formatted()) commits) to stream \(stream)")
        } else if shipper.streamSequence == 0 {
            Output.line("nothing to publish: no commit was made since shipping began\(predating)")
        } else {
            Output.line("nothing to publish: stream \(stream) already holds every commit through \(shipped)")
        }
    }

    /// Names the newest snapshot of the schedule's bucket, when there is one.
    static func reportNewestSnapshot(nats: NATSOptions, schedule: SnapshotSchedule?) throws {
        guard let schedule else { return }
        let name = schedule.bucket ?? SnapshotBucket.defaultName(forStream: nats.stream)
        if let newest = try SnapshotBucket(connection: nats.connection, name: name, create: true).snapshots().last {
            progress("newest snapshot \(newest.name) in bucket \(name), of store \(newest.store.uuidString.lowercased())")
        }
    }

    static func progress(_ line: String) {
        Output.diagnostic(line + "\n")
    }
}

/// When a progress line was last printed, shared with the snapshot's thread.
final class LockedDate: @unchecked Sendable {
    private let lock = NSLock()
    private var last = Date.distantPast

    /// Seconds since the last call that returned at least 1 (which restarts the count).
    func elapsed() -> TimeInterval {
        lock.withLock {
            let seconds = Date().timeIntervalSince(last)
            if seconds >= 1 { last = Date() }
            return seconds
        }
    }
}
