/// Windowed watchers: the snapshot is `limit` rows from position `offset` of the full order,
/// then sectioned. The watcher keeps those rows' ids and keys (O(window) memory); after a commit
/// that touches the query it reads the window again through the counted index (O(log n + w))
/// and reports the difference, so rows pushed across the window's edges by changes elsewhere
/// are deletes and inserts, and moving the window is a batch like any other.
extension WatchEngine {
    /// Records a new window for the next batch; ignored when the watcher has no window.
    func requestWindow(offset: Int, limit: Int) {
        if options.window != nil { pendingWindow = WatchWindow(offset: offset, limit: limit) }
    }

    func nextWindowBatch(in tx: ReadTransaction) throws -> RowChanges? {
        let head = try tx.journalBounds().last
        guard let oldRows = windowRows else { return try windowSnapshot(in: tx, head: head, reset: false) }
        if resetPending {
            resetPending = false
            return try windowSnapshot(in: tx, head: head, reset: true)
        }
        let moved = pendingWindow != nil
        if head == sequence && !moved { return nil }
        var net = NetChanges()
        if head > sequence {
            guard let collected = try changes(in: tx, through: head) else { return try windowSnapshot(in: tx, head: head, reset: true) }
            net = collected
        }
        if let window = pendingWindow {
            options.window = window
            pendingWindow = nil
        }
        // Commits that touch no key in the query's range cannot change the window.
        let range = try tx.resolve(entity: query.entity, index: query.index, range: query.range).keys
        let touches = net.changes.values.contains { c in
            [c.oldKey, c.newKey].contains { key in key.map { k in k.withUnsafeBytes { range.contains($0) } } ?? false }
        }
        if !touches && !moved {
            sequence = head
            return nil
        }
        let (newRows, values) = try fetchWindow(in: tx)
        let batch = try difference(from: oldRows, to: newRows, values: values, net: net, head: head)
        windowRows = newRows
        sequence = head
        return batch.isEmpty ? nil : batch
    }

    /// The window's rows, and their values unless indexes-only.
    private func fetchWindow(in tx: ReadTransaction) throws -> (rows: [WindowRow], values: [FieldValue: Any]) {
        let window = options.window!
        let entries = try tx.entries(entity: query.entity, index: query.index, range: query.range, reverse: query.reverse,
                                     offset: window.offset, limit: window.limit)
        var values: [FieldValue: Any] = [:]
        if !indexesOnly {
            for entry in entries { values[entry.id] = try decode(entry.record, entry.id) }
        }
        return (entries.map { WindowRow(id: $0.id, key: $0.key) }, values)
    }

    private func windowSnapshot(in tx: ReadTransaction, head: UInt64, reset: Bool) throws -> RowChanges {
        pendingWindow.map { options.window = $0 }
        pendingWindow = nil
        let (rows, values) = try fetchWindow(in: tx)
        let sections = windowSections(rows)
        var batch = RowChanges(fromSequence: reset ? sequence : 0, toSequence: head, isInitial: !reset, isReset: reset)
        batch.sectionInserts = sections.keys.enumerated().map { SectionInsert(index: $0.offset, key: $0.element) }
        batch.inserts = rows.enumerated().map { .init(path: sections.paths[$0.offset], id: $0.element.id) }
        batch.values = values
        windowRows = rows
        sequence = head
        return batch
    }

    /// Section keys of a window's rows (runs of equal leading components), and each row's path.
    func windowSections(_ rows: [WindowRow]) -> (keys: [[FieldValue]], paths: [RowPath]) {
        var keys: [[FieldValue]] = []
        var paths: [RowPath] = []
        var row = 0
        for r in rows {
            let key = Array(r.key.prefix(options.sectionBy))
            if keys.last != key || keys.isEmpty {
                keys.append(key)
                row = 0
            }
            paths.append(RowPath(section: keys.count - 1, row: row))
            row += 1
        }
        if options.sectionBy == 0 && keys.isEmpty { keys = [[]] }
        return (keys, paths)
    }

    /// The batch from one window's rows to another's.
    private func difference(from old: [WindowRow], to new: [WindowRow], values: [FieldValue: Any], net: NetChanges,
                            head: UInt64) throws -> RowChanges
    {
        let oldSections = windowSections(old), newSections = windowSections(new)
        var batch = RowChanges(fromSequence: sequence, toSequence: head, isInitial: false, isReset: false)
        batch.values = values
        if options.sectionBy > 0 {
            batch.sectionDeletes = oldSections.keys.enumerated().filter { !newSections.keys.contains($0.element) }.map(\.offset)
            batch.sectionInserts = newSections.keys.enumerated().filter { !oldSections.keys.contains($0.element) }
                .map { SectionInsert(index: $0.offset, key: $0.element) }
        }
        var oldPosition: [FieldValue: Int] = [:]
        for (i, r) in old.enumerated() { oldPosition[r.id] = i }
        var newPosition: [FieldValue: Int] = [:]
        for (i, r) in new.enumerated() { newPosition[r.id] = i }

        var deletedOld: [Int] = [], insertedNew: [Int] = []
        var candidates: [MoveDetection.Candidate] = []
        var candidateRows: [(old: Int, new: Int)] = []
        var sameKey: [(old: Int, new: Int)] = []
        for (i, r) in old.enumerated() {
            guard let j = newPosition[r.id] else {
                deletedOld.append(i)
                batch.deletes.append(.init(path: oldSections.paths[i], id: r.id))
                continue
            }
            if r.key != new[j].key {
                let changedSection = Array(r.key.prefix(options.sectionBy)) != Array(new[j].key.prefix(options.sectionBy))
                candidates.append(.init(old: i, new: j, changedSection: changedSection))
                candidateRows.append((i, j))
            } else {
                sameKey.append((i, j))
            }
        }
        for (j, r) in new.enumerated() where oldPosition[r.id] == nil {
            insertedNew.append(j)
            batch.inserts.append(.init(path: newSections.paths[j], id: r.id))
        }
        let moves = MoveDetection.moves(changedKeys: candidates, deletedOld: deletedOld, insertedNew: insertedNew)
        for (k, rows) in candidateRows.enumerated() {
            let id = new[rows.new].id
            let change = net.changes[id] ?? NetChanges.Change(id: id, allFields: true)
            if moves.contains(k) {
                batch.moves.append(.init(from: oldSections.paths[rows.old], to: newSections.paths[rows.new], id: id, fields: fields(change)))
            } else if shown(change) {
                batch.updates.append(.init(from: oldSections.paths[rows.old], to: newSections.paths[rows.new], id: id, fields: fields(change)))
            }
        }
        for rows in sameKey {
            let id = new[rows.new].id
            guard let change = net.changes[id], change.allFields || !change.fields.isEmpty, shown(change) else { continue }
            batch.updates.append(.init(from: oldSections.paths[rows.old], to: newSections.paths[rows.new], id: id, fields: fields(change)))
        }
        batch.sort()
        return batch
    }
}
