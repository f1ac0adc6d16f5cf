/// When a shipper stores snapshots of its store: the first when shipping starts (unless the
/// bucket holds one a replica can start from), then every so many commits or bytes shipped.
public struct SnapshotSchedule: Sendable, Equatable {
    /// The bucket; ``SnapshotBucket/defaultName(forStream:)`` when nil.
    public var bucket: String?
    /// A new snapshot once this many commits have shipped since the last one (never when nil).
    public var everyCommits: UInt64?
    /// A new snapshot once this many bytes of envelopes have shipped since the last one (never
    /// when nil).
    public var everyBytes: UInt64?
    /// How many snapshots the bucket keeps (the newest), at least 1.
    public var keep: Int
    /// At most this many bytes of a snapshot are sent per second (nil: no limit), so that the
    /// server and the disk keep serving the primary's commits while a large one is stored.
    public var bytesPerSecond: UInt64?

    /// By default, snapshots are sent at up to 32 MiB a second.
    public static let defaultBytesPerSecond: UInt64 = 32 << 20

    /// A schedule; by default only the first snapshot, the newest two kept, sent at up to
    /// ``defaultBytesPerSecond``.
    public init(bucket: String? = nil, everyCommits: UInt64? = nil, everyBytes: UInt64? = nil, keep: Int = 2,
                bytesPerSecond: UInt64? = SnapshotSchedule.defaultBytesPerSecond)
    {
        self.bucket = bucket
        self.everyCommits = everyCommits
        self.everyBytes = everyBytes
        self.keep = max(keep, 1)
        self.bytesPerSecond = bytesPerSecond
    }
}

/// What a shipper's snapshots do, as it happens (they run beside the shipping, on a thread of
/// their own).
public enum SnapshotEvent: Sendable {
    /// A snapshot started (the store is being copied).
    case started
    /// Bytes stored so far, and the copy's size.
    case stored(UInt64, of: UInt64)
    /// The snapshot is in the bucket.
    case finished(Snapshot)
    /// It failed; the shipper tries again when the next one is due, or after a minute.
    case failed(JetStreamError)
}
