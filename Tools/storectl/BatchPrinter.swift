import Feedstore
import FeedstoreDemo

/// Prints change batches readably: section and row changes with their index paths.
enum BatchPrinter {
    static func describe(_ key: [FieldValue]) -> String { key.map(\.jsonText).joined(separator: ", ") }

    static func lines(_ batch: ChangeBatch<Message>) -> [String] {
        var out: [String] = []
        for index in batch.sectionDeletes { out.append("  section \(index) deleted") }
        for section in batch.sectionInserts { out.append("  section \(section.index) inserted [folder \(describe(section.key))]") }
        for d in batch.deletes { out.append("  row \(d.path) deleted (#\(d.id))") }
        for i in batch.inserts { out.append("  row \(i.path) inserted: #\(i.id) \(i.value.title)") }
        for m in batch.moves {
            out.append("  row \(m.from) moved to \(m.to): #\(m.id) \(m.value.title) (\(m.fields.isEmpty ? "replaced" : m.fields.joined(separator: ", ")))")
        }
        for u in batch.updates {
            out.append("  row \(u.from) updated at \(u.to): #\(u.id) (\(u.fields.isEmpty ? "replaced" : u.fields.joined(separator: ", ")))")
        }
        return out
    }
}
