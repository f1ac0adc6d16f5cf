import Feedstore
import Foundation

/// Prints change batches: readable lines with index paths, or one JSON object per batch.
public enum BatchPrinter {
    public static func describe(_ key: [FieldValue]) -> String { key.map(\.jsonText).joined(separator: ", ") }

    public static func fieldList(_ fields: [String]) -> String { fields.isEmpty ? "replaced" : fields.joined(separator: ", ") }

    /// A record as one short line: its JSON, cut to `width` characters.
    public static func summary(_ record: [String: FieldValue]?, width: Int = 96) -> String {
        guard let record else { return "" }
        let text = FieldValue.object(record).jsonText
        return text.count <= width ? text : String(text.prefix(width - 1)) + "…"
    }

    // MARK: Objects mode

    /// Readable lines for a batch's changes; `label` names a row from its record.
    public static func lines(_ batch: DynamicChangeBatch, label: ([String: FieldValue]?) -> String = { summary($0) }) -> [String] {
        var out: [String] = []
        for index in batch.sectionDeletes { out.append("  section \(index) deleted") }
        for section in batch.sectionInserts { out.append("  section \(section.index) inserted [\(describe(section.key))]") }
        for d in batch.deletes { out.append("  row \(d.path) deleted: #\(d.id.jsonText)") }
        for i in batch.inserts { out.append("  row \(i.path) inserted: #\(i.id.jsonText) \(label(i.record))") }
        for m in batch.moves { out.append("  row \(m.from) moved to \(m.to): #\(m.id.jsonText) (\(fieldList(m.fields))) \(label(m.record))") }
        for u in batch.updates { out.append("  row \(u.from) updated at \(u.to): #\(u.id.jsonText) (\(fieldList(u.fields))) \(label(u.record))") }
        return out
    }

    /// The batch as one JSON object (the `storectl watch --jsonl` format).
    public static func json(_ batch: DynamicChangeBatch) -> String { FieldValue.object(batch.jsonMembers).jsonText }

    // MARK: Indexes-only mode

    public static func lines(_ batch: IndexBatch) -> [String] {
        func rows(_ r: IndexBatch.RowRange) -> String {
            r.rows.count == 1 ? "row [\(r.section), \(r.rows.lowerBound)]" : "rows [\(r.section), \(r.rows.lowerBound)..<\(r.rows.upperBound)]"
        }
        var out: [String] = []
        for index in batch.sectionDeletes { out.append("  section \(index) deleted") }
        for section in batch.sectionInserts { out.append("  section \(section.index) inserted [\(describe(section.key))]") }
        for d in batch.deletes { out.append("  \(rows(d)) deleted") }
        for i in batch.inserts { out.append("  \(rows(i)) inserted") }
        for m in batch.moves { out.append("  row \(m.from) moved to \(m.to)") }
        for u in batch.updates { out.append("  row \(u.from) updated at \(u.to) (\(fieldList(u.fields)))") }
        return out
    }

    /// An indexes-only batch as one JSON object: rows as runs `{"at": [s, r], "count": k}`.
    public static func json(_ batch: IndexBatch) -> String { FieldValue.object(batch.jsonMembers).jsonText }
}
