/// Computes a watcher's batches. Cycle: journal → positions → batch. The changes since the
/// last snapshot come from the journal; old and new positions come from the counted index in
/// one read transaction, never from re-running the query. Cost: O(k log n) for k changed rows.
/// The engine knows records only by name and fields: typed watchers give it a decoder for their
/// values, and tools watch stores without the application's types.
final class WatchEngine {
    let query: WatchTarget
    /// Turns a row's stored fields into the value an objects-mode batch carries.
    let decode: (_ fields: [String: FieldValue], _ id: FieldValue) throws -> Any
    var options: WatchOptions
    /// The journal sequence of the snapshot the consumer holds.
    var sequence: UInt64 = 0
    /// The sections of that snapshot; nil until the initial batch.
    private var sections: SectionList?
    /// More changed records than this in one span give a reset instead, bounding memory.
    var backlogLimit = 100_000
    /// The rows of a windowed snapshot, in order (nil when not windowed or before the first batch).
    var windowRows: [WindowRow]?
    /// A window the consumer asked for, shown by the next batch.
    var pendingWindow: WatchWindow?
    /// The next batch must be a reset (the consumer's snapshot could not be kept).
    var resetPending = false

    struct WindowRow {
        var id: FieldValue
        var key: [FieldValue]
    }

    init(query: WatchTarget, options: WatchOptions, decode: @escaping (_ fields: [String: FieldValue], _ id: FieldValue) throws -> Any) {
        self.query = query
        self.options = options
        self.decode = decode
    }

    /// An engine for a typed query, whose batches carry `E` values.
    static func typed<E: Entity>(_ query: Query<E>, options: WatchOptions) -> WatchEngine {
        WatchEngine(query: WatchTarget(query), options: options) { fields, id in try ReadTransaction.decode(E.self, from: fields, id: id) }
    }

    /// The batch from the consumer's snapshot to the store's current state, or nil when nothing
    /// the query shows changed (the watcher still advances to the current sequence).
    func nextBatch(in tx: ReadTransaction) throws -> RowChanges? {
        if options.window != nil { return try nextWindowBatch(in: tx) }
        let head = try tx.journalBounds().last
        guard let old = sections else { return try snapshot(in: tx, head: head, reset: false) }
        if resetPending {
            resetPending = false
            return try snapshot(in: tx, head: head, reset: true)
        }
        if head == sequence { return nil }
        guard let net = try changes(in: tx, through: head) else { return try snapshot(in: tx, head: head, reset: true) }
        let batch = try build(net, from: old, in: tx, head: head)
        return batch.isEmpty ? nil : batch
    }

    // MARK: Whole snapshots

    /// The whole snapshot as inserts: the initial batch, or a reset.
    /// In indexes-only mode the rows are not listed (one run per section), so this is O(sections).
    private func snapshot(in tx: ReadTransaction, head: UInt64, reset: Bool) throws -> RowChanges {
        let resolved = try tx.resolve(entity: query.entity, index: query.index, range: query.range)
        let list = try sectionList(in: tx, resolved)
        var batch = RowChanges(fromSequence: reset ? sequence : 0, toSequence: head, isInitial: !reset, isReset: reset)
        batch.sectionInserts = list.sections.enumerated().map { SectionInsert(index: $0.offset, key: $0.element.key) }
        if indexesOnly {
            batch.insertedSections = list.sections.enumerated().map { ($0.offset, $0.element.count) }
        } else {
            let rows = try tx.entries(entity: query.entity, index: query.index, range: query.range, reverse: query.reverse)
            batch.inserts = rows.enumerated().map { .init(path: list.path(ofFlat: $0.offset), id: $0.element.id) }
            for row in rows { batch.values[row.id] = try decode(row.record, row.id) }
        }
        sections = list
        sequence = head
        return batch
    }

    /// The snapshot's sections, found one per O(log n) step (one section when unsectioned).
    private func sectionList(in tx: ReadTransaction, _ resolved: ReadTransaction.ResolvedQuery) throws -> SectionList {
        guard options.sectionBy > 0 else { return .single(count: resolved.count, descending: query.reverse) }
        var sections: [SectionList.Section] = []
        var consumed = 0
        while consumed < resolved.count {
            let key = try tx.accessCounts(of: resolved.index) { try resolved.index.counted.entry(at: resolved.start + consumed, in: $0) }!
            let prefix = try sectionPrefix(of: key)
            let count = try countInRange(prefix: prefix, tx, resolved)
            guard count > 0 else { throw FeedstoreError.corruptData(what: "index counts", reason: "an entry's section counts 0") }
            sections.append(.init(prefix: prefix, key: try KeyDecoder.decode(prefix).map(\.value), count: count))
            consumed += count
        }
        return SectionList(query.reverse ? sections.reversed() : sections, descending: query.reverse)
    }

    private func sectionPrefix(of key: [UInt8]) throws -> [UInt8] {
        guard options.sectionBy > 0 else { return [] }
        return try key.withUnsafeBytes { Array($0.prefix(try KeyDecoder.lengthOfComponents(options.sectionBy, in: $0))) }
    }

    /// Rows of the query whose key starts with `prefix`.
    private func countInRange(prefix: [UInt8], _ tx: ReadTransaction, _ resolved: ReadTransaction.ResolvedQuery) throws -> Int {
        var low: [UInt8]? = prefix
        if let lower = resolved.keys.lower, prefix.sortsBefore(lower) { low = lower }
        var high = KeyEncoding.successor(ofPrefix: prefix)
        if let upper = resolved.keys.upper, high.map({ upper.sortsBefore($0) }) ?? true { high = upper }
        return try tx.accessCounts(of: resolved.index) { txn in
            let a = try low.map { try resolved.index.counted.rank(of: $0, in: txn) } ?? 0
            let b = try high.map { try resolved.index.counted.rank(of: $0, in: txn) } ?? (try resolved.index.counted.total(in: txn))
            return max(0, b - a)
        }
    }

    // MARK: Incremental batches

    private func build(_ net: NetChanges, from oldSections: SectionList, in tx: ReadTransaction, head: UInt64) throws -> RowChanges {
        let resolved = try tx.resolve(entity: query.entity, index: query.index, range: query.range)
        let range = resolved.keys
        func inRange(_ key: [UInt8]?) -> [UInt8]? {
            guard let key, key.withUnsafeBytes({ range.contains($0) }) else { return nil }
            return key
        }
        // Classify each changed record by membership before and after.
        var changes: [(change: NetChanges.Change, old: [UInt8]?, new: [UInt8]?)] = []
        for change in net.changes.values {
            let old = inRange(change.oldKey), new = inRange(change.newKey)
            if old == nil && new == nil { continue }
            if old == new && !change.allFields && change.fields.isEmpty { continue }
            changes.append((change, old, new))
        }
        let oldKeys = changes.compactMap(\.old).sorted { $0.sortsBefore($1) }
        let newKeys = changes.compactMap(\.new).sorted { $0.sortsBefore($1) }
        let newCount = resolved.count
        let oldCount = newCount - newKeys.count + oldKeys.count

        // Positions: new ones from the counted index; old ones from the new ones, correcting for
        // the changed rows (the old index is the new one minus their new keys plus their old).
        func below(_ sorted: [[UInt8]], _ key: [UInt8]) -> Int {
            var low = 0, high = sorted.count
            while low < high {
                let mid = (low + high) / 2
                if sorted[mid].sortsBefore(key) { low = mid + 1 } else { high = mid }
            }
            return low
        }
        func rank(_ key: [UInt8]) throws -> Int { try tx.accessCounts(of: resolved.index) { try resolved.index.counted.rank(of: key, in: $0) } - resolved.start }
        func newPosition(_ key: [UInt8]) throws -> Int {
            let forward = try rank(key)
            return query.reverse ? newCount - 1 - forward : forward
        }
        func oldPosition(_ key: [UInt8]) throws -> Int {
            let forward = try rank(key) - below(newKeys, key) + below(oldKeys, key)
            return query.reverse ? oldCount - 1 - forward : forward
        }

        // Sections of the new snapshot. A touched section's count is its old count plus the
        // changed rows that joined it minus those that left: the same accounting that gives old
        // positions above, so no section is recounted from the index.
        var newSections = oldSections
        if options.sectionBy == 0 {
            // An unsectioned query always has its one section, even when empty.
            newSections = .single(count: newCount, descending: query.reverse)
        } else {
            var deltas: [[UInt8]: Int] = [:]
            for c in changes {
                if let old = c.old { deltas[try sectionPrefix(of: old), default: 0] -= 1 }
                if let new = c.new { deltas[try sectionPrefix(of: new), default: 0] += 1 }
            }
            for (prefix, delta) in deltas where delta != 0 {
                let count = (oldSections.index(of: prefix).map { oldSections.sections[$0].count } ?? 0) + delta
                guard count >= 0 else { throw FeedstoreError.corruptData(what: "journal", reason: "a section's count falls below zero") }
                try newSections.setCount(count, of: prefix, key: try KeyDecoder.decode(prefix).map(\.value))
            }
            guard newSections.rowCount == newCount else {
                throw FeedstoreError.corruptData(what: "journal", reason: "the changes since the last batch do not add up to the index's count")
            }
        }
        var batch = RowChanges(fromSequence: sequence, toSequence: head, isInitial: false, isReset: false)
        if options.sectionBy > 0 {
            batch.sectionDeletes = oldSections.sections.enumerated().filter { newSections.index(of: $0.element.prefix) == nil }.map(\.offset)
            batch.sectionInserts = newSections.sections.enumerated().filter { oldSections.index(of: $0.element.prefix) == nil }
                .map { SectionInsert(index: $0.offset, key: $0.element.key) }
        }

        // Rows: deletes, inserts, and survivors (moves and updates).
        var deletedOld: [Int] = [], insertedNew: [Int] = []
        var candidates: [MoveDetection.Candidate] = []
        var changedKeyRows: [Int] = []
        var sameKeyRows: [Int] = []
        var positions: [(old: Int?, new: Int?)] = []
        for (i, c) in changes.enumerated() {
            let old = try c.old.map(oldPosition), new = try c.new.map(newPosition)
            positions.append((old, new))
            switch (old, new) {
            case let (o?, nil): deletedOld.append(o)
            case let (nil, n?): insertedNew.append(n)
            case let (o?, n?):
                if c.old != c.new {
                    let changedSection = try sectionPrefix(of: c.old!) != sectionPrefix(of: c.new!)
                    candidates.append(.init(old: o, new: n, changedSection: changedSection))
                    changedKeyRows.append(i)
                } else {
                    sameKeyRows.append(i)
                }
            default: break
            }
        }
        deletedOld.sort()
        insertedNew.sort()
        let moved = MoveDetection.moves(changedKeys: candidates, deletedOld: deletedOld, insertedNew: insertedNew)
        for (i, c) in changes.enumerated() {
            let (old, new) = positions[i]
            switch (old, new) {
            case let (o?, nil):
                batch.deletes.append(.init(path: oldSections.path(ofFlat: o), id: c.change.id))
            case let (nil, n?):
                batch.inserts.append(.init(path: newSections.path(ofFlat: n), id: c.change.id))
            default: break
            }
        }
        for (j, i) in changedKeyRows.enumerated() {
            let c = changes[i].change
            let from = oldSections.path(ofFlat: positions[i].old!), to = newSections.path(ofFlat: positions[i].new!)
            if moved.contains(j) {
                batch.moves.append(.init(from: from, to: to, id: c.id, fields: fields(c)))
            } else if shown(c) {
                batch.updates.append(.init(from: from, to: to, id: c.id, fields: fields(c)))
            }
        }
        for i in sameKeyRows where shown(changes[i].change) {
            let c = changes[i].change
            batch.updates.append(.init(from: oldSections.path(ofFlat: positions[i].old!), to: newSections.path(ofFlat: positions[i].new!),
                                       id: c.id, fields: fields(c)))
        }
        batch.sort()
        sections = newSections
        sequence = head
        return batch
    }

    // MARK: Shared helpers

    /// The net changes since the snapshot, related records included; nil when the watcher must
    /// reset instead (behind the journal's retention, or more changes than ``backlogLimit``).
    func changes(in tx: ReadTransaction, through head: UInt64) throws -> NetChanges? {
        do {
            guard var net = try NetChanges.collect(tx, after: sequence, through: head, entity: query.entity, index: query.index,
                                                   limit: backlogLimit) else { return nil }
            try includeRelated(&net, in: tx, through: head)
            return net
        } catch FeedstoreError.journalBehindRetention {
            return nil
        }
    }

    /// Indexes-only watchers list no values, and their snapshots no rows.
    var indexesOnly: Bool { options.mode == .indexesOnly }

    /// The snapshot's sections (for indexes-only watchers' counts and positions).
    var currentSections: SectionList? { sections }

    /// Adds, for every related record changed since the snapshot, the rows that refer to it: an
    /// update whose changed field is the related entity's name. The rows are found through the
    /// foreign-key index, O(log n) each.
    func includeRelated(_ net: inout NetChanges, in tx: ReadTransaction, through head: UInt64) throws {
        guard !options.related.isEmpty else { return }
        let watched = try tx.entity(query.entity).index(named: query.index)
        for related in options.related {
            guard let changed = try NetChanges.collect(tx, after: sequence, through: head, entity: related.entity, index: "",
                                                      limit: backlogLimit) else { continue }
            for relatedID in changed.changes.keys {
                for id in try tx.ids(entity: query.entity, index: related.foreignKeyIndex, range: .prefix(relatedID)) {
                    if var existing = net.changes[id] {
                        existing.fields.insert(related.entity)
                        net.changes[id] = existing
                        continue
                    }
                    guard let fields = try tx.record(entity: query.entity, id: id),
                          let key = try watched.key(of: fields, primaryKey: try KeyEncoding.encode([id])) else { continue }
                    net.changes[id] = NetChanges.Change(id: id, oldKey: key, newKey: key, fields: [related.entity])
                }
            }
        }
    }

    /// The changed fields an update or move reports (empty when any field may have changed).
    func fields(_ c: NetChanges.Change) -> [String] { c.allFields ? [] : c.fields.sorted() }

    /// Whether an update passes the field filter.
    func shown(_ c: NetChanges.Change) -> Bool {
        guard let filter = options.fields, !c.allFields else { return true }
        return !c.fields.isDisjoint(with: filter)
    }
}
