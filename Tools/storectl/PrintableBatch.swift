import DemoConsole
import Feedstore

/// What `storectl watch` prints of a batch, in either mode.
protocol PrintableBatch: Sendable {
    var fromSequence: UInt64 { get }
    var toSequence: UInt64 { get }
    var isInitial: Bool { get }
    var isReset: Bool { get }
    var sectionInserts: [SectionInsert] { get }
    /// Inserted rows as runs (section, count), for a snapshot's summary.
    var insertedRuns: [(section: Int, count: Int)] { get }
    /// The `--jsonl` line.
    var jsonLine: String { get }
    /// Readable lines for the changes.
    var changeLines: [String] { get }
    /// Readable lines for the rows a snapshot inserts (a window's rows), where the batch has them.
    var rowLines: [String] { get }
}

extension DynamicChangeBatch: PrintableBatch {
    var insertedRuns: [(section: Int, count: Int)] { inserts.map { ($0.path.section, 1) } }
    var jsonLine: String { BatchPrinter.json(self) }
    var changeLines: [String] { BatchPrinter.lines(self) }
    /// Whole records: a window small enough to print is read in full.
    var rowLines: [String] { inserts.map { "  row \($0.path): #\($0.id.jsonText) \(BatchPrinter.summary($0.record, width: .max))" } }
}

extension IndexBatch: PrintableBatch {
    var insertedRuns: [(section: Int, count: Int)] { inserts.map { ($0.section, $0.rows.count) } }
    var jsonLine: String { BatchPrinter.json(self) }
    var changeLines: [String] { BatchPrinter.lines(self) }
    /// Positions only: an indexes-only batch has no rows to print.
    var rowLines: [String] { [] }
}
