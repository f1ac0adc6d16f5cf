import Feedstore
import Foundation
import Logging

/// Takes a shipper's snapshots on a thread of its own, one at a time, so that shipping goes on
/// while the store is copied and stored. Owned by the shipper's thread: ``start()``,
/// ``isRunning`` and ``wait()`` are called from there alone.
final class SnapshotTaker: @unchecked Sendable {
    let schedule: SnapshotSchedule
    let bucketName: String
    private let store: Store
    private let connection: JetStreamConnection
    private let onEvent: @Sendable (SnapshotEvent) -> Void
    private let done = NSCondition()
    private var running = false
    /// The newest snapshot's commit, as last stored or found in the bucket.
    private var lastCommit: UInt64?
    /// The shipper's bytes shipped when the last snapshot started.
    private var bytesMark: UInt64 = 0
    private var lastFailure: ContinuousClock.Instant?

    init(store: Store, connection: JetStreamConnection, stream: String, schedule: SnapshotSchedule,
         metrics: ReplicationMetrics, logger: Logger, onEvent: @escaping @Sendable (SnapshotEvent) -> Void)
    {
        self.store = store
        self.connection = connection
        self.schedule = schedule
        let bucketName = schedule.bucket ?? SnapshotBucket.defaultName(forStream: stream)
        self.bucketName = bucketName
        // Logged and counted, then told to the caller.
        self.onEvent = { event in
            switch event {
            case .started: logger.info("snapshot started", metadata: ["bucket": "\(bucketName)"])
            case let .stored(done, _): metrics.snapshotBytes.record(done)
            case let .finished(snapshot):
                metrics.snapshotsStored.increment()
                logger.info("snapshot stored", metadata: ["bucket": "\(bucketName)", "name": "\(snapshot.name)", "bytes": "\(snapshot.size)"])
            case let .failed(error):
                metrics.snapshotsFailed.increment()
                logger.error("snapshot failed: \(error)", metadata: ["bucket": "\(bucketName)"])
            }
            onEvent(event)
        }
    }

    /// Reads the bucket (creating it): the newest snapshot's commit.
    func readBucket(over connection: NATSConnection) throws {
        let newest = try SnapshotBucket(connection, name: bucketName, create: true).snapshots().last?.commit
        done.withLock { lastCommit = newest }
    }

    /// Whether a snapshot is due: none meets the stream (`firstNeeded` is the first commit a
    /// replica needs from it), or the schedule's commits or bytes have shipped since the last.
    func isDue(firstNeeded: UInt64, shippedSequence: UInt64, shippedBytes: UInt64) -> Bool {
        done.withLock {
            if running { return false }
            if let lastFailure, ContinuousClock.now - lastFailure < .seconds(60) { return false }
            guard let lastCommit, lastCommit + 1 >= firstNeeded else { return true }
            if let every = schedule.everyCommits, shippedSequence >= lastCommit + every { return true }
            if let every = schedule.everyBytes, shippedBytes >= bytesMark + every { return true }
            return false
        }
    }

    /// Starts a snapshot unless one runs; `shippedBytes` is the shipper's count so far.
    func start(shippedBytes: UInt64) {
        let began: Bool = done.withLock {
            if running { return false }
            running = true
            bytesMark = shippedBytes
            return true
        }
        guard began else { return }
        NamedThread.start("fs snapshot") { [self] in
            #if os(Linux)
            // Below the writer and the shipper: the snapshot can wait, commits should not. (On
            // Linux a nice value is the calling thread's.)
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
            #endif
            onEvent(.started)
            var outcome: SnapshotEvent
            do {
                let bucket = try SnapshotBucket(connection: connection, name: bucketName, create: true)
                let snapshot = try bucket.publish(from: store, keep: schedule.keep, bytesPerSecond: schedule.bytesPerSecond,
                                                  progress: { [onEvent] in onEvent(.stored($0, of: $1)) })
                outcome = .finished(snapshot)
            } catch let error as JetStreamError {
                outcome = .failed(error)
            } catch {
                outcome = .failed(.fileFailed(reason: "\(error)"))
            }
            // Told before the snapshot counts as done, so that a shipper waiting for it
            // returns after its caller has heard.
            onEvent(outcome)
            done.withLock {
                switch outcome {
                case let .finished(snapshot): lastCommit = snapshot.commit; lastFailure = nil
                default: lastFailure = .now
                }
                running = false
                done.broadcast()
            }
        }
    }

    /// Waits until no snapshot runs.
    func wait() {
        done.withLock { while running { done.wait() } }
    }
}
