import Feedstore
import FeedstoreDemo
import Foundation

extension PowerLoss {
    /// Checks the crash states of `storectl compact` writing a copy of `source` into the new
    /// directory `destination`. A power loss may keep or lose, independently:
    /// - each page of the copy written since its last sync;
    /// - the rename of `data.mdb.partial` to `data.mdb`, until the destination directory is synced;
    /// - the new directory itself, until its parent is synced.
    /// So a state has the copy's contents under `data.mdb` or has no `data.mdb`. A copy present
    /// must open, verify clean and hold every record and commit of the source; once compact
    /// reported the copy, it must be present; a leftover `data.mdb.partial` must not stop the
    /// next compaction into the same directory. The source is only read.
    func checkCompaction(_ log: WriteLog, of source: String, into destination: String, before: Facts, states wanted: Int,
                         rng: inout SeededGenerator, report: inout Report) throws {
        let partial = destination + "/data.mdb.partial", dataFile = destination + "/data.mdb"
        let parent = (destination as NSString).deletingLastPathComponent
        let context = "compaction"
        if log.operations.contains(.file(source + "/data.mdb")) {
            report.failedVerify += 1
            report.describe("\(context): compact wrote to its source's data file")
        }
        guard let reported = log.firstLine(startingWith: "compacted ") else {
            throw Failure(description: "\(context): storectl compact did not report the copy")
        }
        // Every point from the copy's last write on (its sync, rename and directory syncs), and
        // random ones among the writes.
        let count = log.operations.count
        let lastWrite = log.operations.lastIndex { if case .write = $0 { true } else { false } } ?? 0
        let points = Set(Array(lastWrite...count) + Self.crashPoints(in: 0...lastWrite, wanted: wanted / 4, rng: &rng)).sorted()
        var replay = LogReplay(log, files: [partial: LogReplay.File([])])
        let expected = Expectation(lastCommit: before.lastCommit, counts: before.counts)
        for point in points {
            replay.advance(to: point)
            let renamed = replay.renames.last { $0.from == partial && $0.to == dataFile }?.index
            let renameSynced = renamed.map { index in replay.directorySyncs.contains { $0.index > index && $0.path == destination } } ?? false
            let directorySynced = replay.directorySyncs.contains { $0.path == parent }
            // Whether `data.mdb` can be there, and whether it can be missing.
            let canBePresent = renamed != nil
            let canBeMissing = !(renameSynced && directorySynced)
            let acknowledged = reported < point
            // The copy is written in a few large writes: more of their page subsets are sampled.
            for image in replay.files[partial]!.images(samples: max(2, wanted / points.count), using: &rng) {
                let state = "\(context), crash after \(point) of \(count) writes and syncs"
                if canBePresent {
                    report.states += 1
                    try check(image, context: state + ", copy renamed", expected, in: destination + "-states", report: &report)
                }
                if canBeMissing {
                    report.states += 1
                    if acknowledged {
                        report.acknowledgedLost += 1
                        report.describe("\(state): compact reported the copy, yet a power loss can leave none")
                    }
                    try checkLeftover(image, of: source, context: state, in: destination + "-states", report: &report)
                }
            }
        }
    }

    /// A directory that holds only a copy cut short (`data.mdb.partial`) takes the next
    /// compaction as an empty one would.
    func checkLeftover(_ image: [UInt8], of source: String, context: String, in run: String, report: inout Report) throws {
        let path = run + "/leftover-\(report.states)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(image).write(to: URL(fileURLWithPath: path + "/data.mdb.partial"))
        do {
            let store = try Store(path: source, options: StoreOptions(readOnly: true))
            defer { store.close() }
            try store.copy(to: path, compact: true)
        } catch {
            report.failedVerify += 1
            report.describe("\(context): compacting again into the directory a power loss left: \(error)")
        }
    }
}
