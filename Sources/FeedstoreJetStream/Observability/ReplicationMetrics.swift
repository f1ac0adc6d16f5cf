import CoreMetrics

/// What shipping, following, snapshots and restores report through swift-metrics, for the
/// backend the application bootstraps (Prometheus, StatsD, OpenTelemetry …; none by default).
/// Every metric carries the stream's name as the dimension `stream`.
///
/// | name | kind | what |
/// |---|---|---|
/// | `feedstore_shipped_commits_total` | counter | commits the stream acknowledged |
/// | `feedstore_shipped_bytes_total` | counter | bytes of their envelopes |
/// | `feedstore_shipped_commit` | gauge | the newest commit in the stream |
/// | `feedstore_applied_commits_total` | counter | commits applied to a replica |
/// | `feedstore_applied_commit` | gauge | the newest commit applied |
/// | `feedstore_replica_lag_commits` | gauge | messages the stream holds past the replica |
/// | `feedstore_replica_lag_milliseconds` | gauge | how long ago the origin made the last commit applied, while some wait |
/// | `feedstore_snapshot_stored_bytes` | gauge | bytes of the snapshot in progress stored so far |
/// | `feedstore_snapshots_total` | counter | snapshots, by `outcome`: `stored` or `failed` |
/// | `feedstore_restore_fetched_bytes` | gauge | bytes of the restore in progress fetched so far |
/// | `feedstore_restores_total` | counter | snapshots restored into replicas |
/// | `feedstore_promotions_total` | counter | replicas promoted |
/// | `feedstore_forwarded_writes_total` | counter | write requests a primary applied (retries answered from memory included) |
/// | `feedstore_forwarded_write_retries_total` | counter | write requests a replica sent again with the same id |
struct ReplicationMetrics {
    let shippedCommits: Counter
    let shippedBytes: Counter
    let shippedCommit: Gauge
    let appliedCommits: Counter
    let appliedCommit: Gauge
    let lagCommits: Gauge
    let lagMilliseconds: Gauge
    let snapshotBytes: Gauge
    let snapshotsStored: Counter
    let snapshotsFailed: Counter
    let restoreBytes: Gauge
    let restores: Counter
    let promotions: Counter
    let forwardedWrites: Counter
    let forwardedRetries: Counter

    init(stream: String) {
        let dimensions = [("stream", stream)]
        shippedCommits = Counter(label: "feedstore_shipped_commits_total", dimensions: dimensions)
        shippedBytes = Counter(label: "feedstore_shipped_bytes_total", dimensions: dimensions)
        shippedCommit = Gauge(label: "feedstore_shipped_commit", dimensions: dimensions)
        appliedCommits = Counter(label: "feedstore_applied_commits_total", dimensions: dimensions)
        appliedCommit = Gauge(label: "feedstore_applied_commit", dimensions: dimensions)
        lagCommits = Gauge(label: "feedstore_replica_lag_commits", dimensions: dimensions)
        lagMilliseconds = Gauge(label: "feedstore_replica_lag_milliseconds", dimensions: dimensions)
        snapshotBytes = Gauge(label: "feedstore_snapshot_stored_bytes", dimensions: dimensions)
        snapshotsStored = Counter(label: "feedstore_snapshots_total", dimensions: dimensions + [("outcome", "stored")])
        snapshotsFailed = Counter(label: "feedstore_snapshots_total", dimensions: dimensions + [("outcome", "failed")])
        restoreBytes = Gauge(label: "feedstore_restore_fetched_bytes", dimensions: dimensions)
        restores = Counter(label: "feedstore_restores_total", dimensions: dimensions)
        promotions = Counter(label: "feedstore_promotions_total", dimensions: dimensions)
        forwardedWrites = Counter(label: "feedstore_forwarded_writes_total", dimensions: dimensions)
        forwardedRetries = Counter(label: "feedstore_forwarded_write_retries_total", dimensions: dimensions)
    }
}
