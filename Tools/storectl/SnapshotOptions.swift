import ArgumentParser
import FeedstoreJetStream

/// When `ship` and `promote` store snapshots, and where.
struct SnapshotOptions: ParsableArguments {
    @Option(help: "The Object Store bucket of the snapshots (default <stream>-snapshots).")
    var bucket: String?

    @Option(name: .customLong("snapshot-every"),
            help: "Take a snapshot every so many commits (10000) or bytes shipped (64MiB, 1GB); without it, only when shipping starts and no snapshot meets the stream.")
    var snapshotEvery: String?

    @Option(name: .customLong("keep-snapshots"), help: "How many snapshots the bucket keeps, the newest.")
    var keep: Int = 2

    @Option(name: .customLong("snapshot-rate"), help: "At most this many bytes of a snapshot sent per second (32MiB by default; 0 for no limit), so that the server and the disk keep serving commits.")
    var rate: String?

    @Flag(name: .customLong("no-snapshots"), help: "Take no snapshots (replicas then start from a copy, or from an empty store when the stream holds the whole history).")
    var noSnapshots = false

    func validate() throws {
        if let snapshotEvery { _ = try Self.parse(snapshotEvery) }
        if let rate, rate != "0" { _ = try Self.bytes(rate, option: "--snapshot-rate") }
        guard keep >= 1 else { throw ValidationError("--keep-snapshots must be at least 1") }
    }

    /// A count of commits, or bytes with a unit.
    static func parse(_ text: String) throws -> (commits: UInt64?, bytes: UInt64?) {
        if let commits = UInt64(text), commits > 0 { return (commits, nil) }
        return (nil, try bytes(text, option: "--snapshot-every"))
    }

    /// Bytes with a unit (KB, MB, GB: powers of 1000; KiB, MiB, GiB: of 1024; B).
    static func bytes(_ text: String, option: String) throws -> UInt64 {
        let units: [(String, UInt64)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("B", 1)]
        for (unit, factor) in units where text.hasSuffix(unit) {
            if let count = Double(text.dropLast(unit.count)), count > 0 { return UInt64(count * Double(factor)) }
        }
        throw ValidationError(option == "--snapshot-every"
            ? "--snapshot-every takes a number of commits (10000) or of bytes with a unit (64MiB, 1GB), not \(text)"
            : "\(option) takes bytes with a unit (64MiB, 1GB), or 0, not \(text)")
    }

    var schedule: SnapshotSchedule? {
        guard !noSnapshots else { return nil }
        // Validated by validate().
        let every = snapshotEvery.flatMap { try? Self.parse($0) }
        let bytesPerSecond = rate == "0" ? nil : rate.flatMap { try? Self.bytes($0, option: "--snapshot-rate") } ?? SnapshotSchedule.defaultBytesPerSecond
        return SnapshotSchedule(bucket: bucket, everyCommits: every?.commits, everyBytes: every?.bytes, keep: keep, bytesPerSecond: bytesPerSecond)
    }
}
