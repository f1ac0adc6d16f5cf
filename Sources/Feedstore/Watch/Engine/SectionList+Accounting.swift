/// The sections stage: the new snapshot's sections from the old ones and the changed rows. A
/// touched section's count is its old count plus the changed rows that joined it minus those
/// that left: the same accounting that gives old positions, so no section is recounted from the
/// index. A check that the sections add up to the index's count guards it.
extension SectionList {
    func applying(_ rows: ChangedRows, sectionBy: Int) throws -> SectionList {
        // An unsectioned query always has its one section, even when empty.
        guard sectionBy > 0 else { return .single(count: rows.newCount, descending: descending) }
        var deltas: [[UInt8]: Int] = [:]
        for row in rows.rows {
            if let old = row.oldKey { deltas[try SectionList.prefix(of: old, components: sectionBy), default: 0] -= 1 }
            if let new = row.newKey { deltas[try SectionList.prefix(of: new, components: sectionBy), default: 0] += 1 }
        }
        var result = self
        for (prefix, delta) in deltas where delta != 0 {
            let count = (index(of: prefix).map { sections[$0].count } ?? 0) + delta
            guard count >= 0 else { throw FeedstoreError.corruptData(what: "journal", reason: "a section's count falls below zero") }
            try result.setCount(count, of: prefix, key: try KeyDecoder.decode(prefix).map(\.value))
        }
        guard result.rowCount == rows.newCount else {
            throw FeedstoreError.corruptData(what: "journal", reason: "the changes since the last batch do not add up to the index's count")
        }
        return result
    }

    /// The sections of `old` missing from `new` (old indexes) and of `new` missing from `old`.
    static func difference(from old: SectionList, to new: SectionList) -> (deletes: [Int], inserts: [SectionInsert]) {
        var oldIndexes: [[UInt8]: Int] = [:]
        for (i, section) in old.sections.enumerated() { oldIndexes[section.prefix] = i }
        var inserts: [SectionInsert] = []
        var kept = Set<Int>()
        for (i, section) in new.sections.enumerated() {
            if let j = oldIndexes[section.prefix] { kept.insert(j) } else { inserts.append(SectionInsert(index: i, key: section.key)) }
        }
        return (old.sections.indices.filter { !kept.contains($0) }, inserts)
    }
}
