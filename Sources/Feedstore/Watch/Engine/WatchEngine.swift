/// Computes a watcher's batches. Cycle: journal fold → positions → sections → window → moves →
/// batch. The store's ``ChangeFeed`` folds each commit once and hands the engine only the
/// records it concerns; old and new positions come from the counted index in one read
/// transaction, never from re-running the query or reading the window. Cost: O(k log n) for k
/// changed rows, plus the rows a window's edges gain or lose.
///
/// The engine knows records only by name and fields; batches gain their values (typed or
/// dynamic) or their ranges (indexes-only) in the watcher's reducer.
///
/// A filtered watcher's rows are the range's entries whose records pass its filter. It keeps
/// them in a ``FilteredOrder``, made by one pass over the range for the first batch (and a
/// reset), and changed per batch: each changed record's old key leaves it if it was there, its
/// new key enters if the record passes now. Positions then come from that order, O(log m) for m
/// rows, by the same arithmetic as a plain range's.
final class WatchEngine {
    /// What a call to ``nextBatch(in:)`` found.
    enum Step {
        case batch(RowChanges)
        /// Nothing the query shows changed (the engine still advanced to the transaction's head).
        case unchanged
        /// The feed is past the transaction's snapshot: call again in a newer transaction.
        case retry
    }

    let query: WatchTarget
    private(set) var options: WatchOptions
    /// Batches list no row ids that are not at hand (indexes-only watchers read rows on demand).
    let indexesOnly: Bool
    private let feed: ChangeFeed
    private var subscription: FeedSubscription?
    /// The journal sequence of the snapshot the consumer holds.
    private(set) var sequence: UInt64 = 0
    /// What the consumer holds of the query's list in that snapshot: its sections, the window's
    /// rows, and their paths; nil until the initial batch.
    private(set) var layout: ListLayout?
    /// A window the consumer asked for, shown by the next batch.
    private var pendingWindow: WatchWindow?
    /// The next batch must be a reset (the consumer's snapshot could not be kept).
    var resetPending = false
    /// A filtered watcher's rows in the consumer's snapshot; nil before the first batch, and for
    /// a plain range.
    private var order: FilteredOrder?

    init(query: WatchTarget, options: WatchOptions, indexesOnly: Bool, feed: ChangeFeed) {
        self.query = query
        self.options = options
        self.indexesOnly = indexesOnly
        self.feed = feed
    }

    /// Stops the feed's routing to this engine.
    func stop() {
        if let subscription { feed.remove(subscription) }
    }

    /// Wakes the consumer waiting for this engine's next batch.
    func signal() {
        if let subscription { feed.signal(subscription) }
    }

    /// The feed's handle on this engine, once the first batch registered it.
    var feedSubscription: FeedSubscription? { subscription }

    /// Records a new window for the next batch; ignored when the watcher has no window.
    func requestWindow(offset: Int, limit: Int) {
        if options.window != nil { pendingWindow = WatchWindow(offset: offset, limit: limit) }
    }

    /// The batch from the consumer's snapshot to the state `tx` shows.
    func nextBatch(in tx: ReadTransaction) throws -> Step {
        if let problem = query.keyPathProblem { throw problem.error(entity: query.entity, usedBy: "the filter") }
        let head = try tx.newestSequence()
        let resolved = try tx.resolve(entity: query.entity, index: query.index, range: query.range)
        let filter = try tx.compiledFilter(query.filter, of: resolved)
        let entity = try tx.entity(query.entity)
        let target = FeedSubscription.Target.range(entity: entity.catalog.id, index: resolved.index.catalog.id, keys: resolved.keys)
        let subscription: FeedSubscription
        if let existing = self.subscription {
            subscription = existing
            if existing.target != target {
                // The index was rebuilt under a new number: what the old one folded is void.
                feed.retarget(existing, to: target)
                resetPending = true
            }
        } else {
            options = try options.resolved(entity: query.entity, index: resolved.index.definition)
            try checkNames(of: entity, in: tx)
            subscription = feed.subscription(target, related: try options.related.map { try tx.entity($0.entity).catalog.id })
            self.subscription = subscription
        }
        guard let folded = try feed.synchronize(subscription, through: head, in: tx) else { return .retry }
        if layout == nil { return .batch(try snapshot(in: tx, try rows(of: resolved, passing: filter, in: tx), head: head, reset: false)) }
        if resetPending || folded.overflowed || filter != nil && order == nil {
            resetPending = false
            return .batch(try snapshot(in: tx, try rows(of: resolved, passing: filter, in: tx), head: head, reset: true))
        }
        if folded.isEmpty && pendingWindow == nil {
            sequence = head
            return .unchanged
        }
        var changes = try changedRecords(folded, entity: entity, range: resolved.keys, in: tx)
        var shown = resolved
        if let filter, let order {
            // Until the batch is made the order is ahead of the consumer's snapshot: should
            // anything below fail, the next batch is a reset, which makes the order anew.
            self.order = nil
            changes = try membership(of: changes, in: resolved, passing: filter, order: order, in: tx)
            shown = resolved.filtered(by: filter, order: order)
        }
        let batch = try build(ChangedRows(changes, query: shown, reverse: query.reverse, in: tx), shown, in: tx, head: head)
        if let kept = shown.order { order = kept }
        return batch.isEmpty && !batch.movesWindow ? .unchanged : .batch(batch)
    }

    /// The query's rows in `tx`: the range, or with a filter, its entries that pass, found by one
    /// pass and kept as the watcher's order.
    private func rows(of range: ReadTransaction.ResolvedQuery, passing filter: RecordFilter?, in tx: ReadTransaction) throws
        -> ReadTransaction.ResolvedQuery
    {
        order = nil
        guard let filter else { return range }
        let made = try tx.filteredOrder(of: range, passing: filter)
        order = made
        return range.filtered(by: filter, order: made)
    }

    /// The changes as a filtered watcher's rows see them, with `order` brought up to date: a
    /// changed record's old key counts only if the order held it, its new key only if the record
    /// passes now. Cost: O(k log m) for k changed records and m rows, plus reading each record
    /// that is in the range now.
    private func membership(of changes: [ChangedRecord], in range: ReadTransaction.ResolvedQuery, passing filter: RecordFilter,
                            order: FilteredOrder, in tx: ReadTransaction) throws -> [ChangedRecord]
    {
        var members: [ChangedRecord] = []
        members.reserveCapacity(changes.count)
        for var change in changes {
            if let old = change.oldKey, !order.contains(old) { change.oldKey = nil }
            if let new = change.newKey {
                let passes = try new.withUnsafeBytes { key in
                    try range.keys.contains(key) && tx.passes(filter, entryKey: key, of: range)
                }
                if !passes { change.newKey = nil }
            }
            members.append(change)
        }
        // Every read is done: the order changes as a whole or not at all.
        for change in members { if let old = change.oldKey { order.remove(old) } }
        for change in members { if let new = change.newKey { order.insert(new) } }
        return members
    }

    /// The query as the consumer's snapshot shows it, for reading rows in that snapshot: a
    /// filtered watcher's rows come from its order, which `tx` then also answers the filtered
    /// query's reads by.
    func shownQuery(in tx: ReadTransaction) throws -> ReadTransaction.ResolvedQuery {
        let resolved = try tx.resolve(entity: query.entity, index: query.index, range: query.range)
        guard let filter = query.filter else { return resolved }
        // The order holds the snapshot of the last batch; a transaction at another commit (the
        // map grew and the snapshot was let go) makes its own.
        guard let order, let compiled = try tx.compiledFilter(filter, of: resolved), try tx.newestSequence() == sequence else {
            return try tx.resolve(entity: query.entity, index: query.index, range: query.range, filter: filter)
        }
        try tx.adopt(order, filter: filter, entity: query.entity, index: query.index, range: query.range)
        return resolved.filtered(by: compiled, order: order)
    }

    /// Refuses options that name no field, entity or index of the store, before the first batch.
    private func checkNames(of entity: EntitySchema, in tx: ReadTransaction) throws {
        for field in (options.fields ?? []).sorted() {
            try entity.catalog.checkField(field, usedBy: "the watch options' fields")
        }
        for related in options.related {
            _ = try tx.entity(related.entity)
            _ = try entity.index(named: related.foreignKeyIndex)
        }
    }

    // MARK: Whole snapshots

    /// The whole snapshot as inserts: the initial batch, or a reset. In indexes-only mode the
    /// rows are not listed (one run per section shown), so this is O(sections · log n).
    private func snapshot(in tx: ReadTransaction, _ resolved: ReadTransaction.ResolvedQuery, head: UInt64, reset: Bool) throws -> RowChanges {
        takePendingWindow()
        let layout = ListLayout(sections: try sectionList(in: tx, resolved), window: options.window)
        var batch = RowChanges(fromSequence: reset ? sequence : 0, toSequence: head, isInitial: !reset, isReset: reset)
        batch.header.window = options.window
        batch.header.sectionInserts = layout.shown.sections.enumerated().map { SectionInsert(index: $0.offset, key: $0.element.key) }
        if indexesOnly {
            batch.insertedSections = layout.shown.sections.enumerated().map { ($0.offset, $0.element.count) }
        } else {
            let keys = try resolved.rowKeys(offset: layout.visible.lowerBound, limit: layout.shownCount, reverse: query.reverse, in: tx)
            batch.inserts = keys.enumerated().map { .init(path: layout.path(ofShown: $0.offset), id: $0.element.id, primaryKey: $0.element.primaryKey) }
        }
        self.layout = layout
        sequence = head
        return batch
    }

    /// Shows the window asked for; whether it differs from the one shown.
    @discardableResult
    private func takePendingWindow() -> Bool {
        defer { pendingWindow = nil }
        guard let window = pendingWindow, window != options.window else { return false }
        options.window = window
        return true
    }

    /// The snapshot's sections, found one per O(log n) step (one section when unsectioned).
    private func sectionList(in tx: ReadTransaction, _ resolved: ReadTransaction.ResolvedQuery) throws -> SectionList {
        guard options.sectionBy > 0 else { return .single(count: resolved.count, descending: query.reverse) }
        var sections: [SectionList.Section] = []
        var consumed = 0
        while consumed < resolved.count {
            // Sections are found in index order, then put in the query's.
            let key = try resolved.entryKey(at: consumed, reverse: false, in: tx)!
            let prefix = try SectionList.prefix(of: key, components: options.sectionBy)
            let count = try resolved.count(withPrefix: prefix, in: tx)
            guard count > 0 else { throw FeedstoreError.corruptData(what: "index counts", reason: "an entry's section counts 0") }
            sections.append(.init(prefix: prefix, key: try KeyDecoder.decode(prefix).map(\.value), count: count))
            consumed += count
        }
        return SectionList(query.reverse ? sections.reversed() : sections, descending: query.reverse)
    }

    // MARK: Incremental batches

    private func build(_ rows: ChangedRows, _ resolved: ReadTransaction.ResolvedQuery, in tx: ReadTransaction, head: UInt64) throws -> RowChanges {
        let old = layout!
        guard old.listCount == rows.oldCount else {
            throw FeedstoreError.corruptData(what: "journal", reason: "the changes since the last batch do not lead back to its row count")
        }
        let movesWindow = takePendingWindow()
        let new = ListLayout(sections: try old.sections.applying(rows, sectionBy: options.sectionBy), window: options.window)
        var batch = RowChanges(fromSequence: sequence, toSequence: head, isInitial: false, isReset: false)
        batch.header.window = options.window
        batch.movesWindow = movesWindow
        if options.sectionBy > 0 { (batch.header.sectionDeletes, batch.header.sectionInserts) = SectionList.difference(from: old.shown, to: new.shown) }

        // Window: changed rows by their list positions, untouched rows pushed across its edges.
        let window = WindowProjection(oldVisible: old.visible, newVisible: new.visible, rows: rows)
        // Shown positions, old and new, of the rows the batch names.
        var deletedOld: [Int] = [], insertedNew: [Int] = []
        // Changed rows shown before and after, at their shown positions; only those whose key
        // changed may move.
        var survivors: [Survivor] = []
        let filter = FieldFilter(options.fields, entity: resolved.entity)
        for (index, row) in rows.rows.enumerated() {
            switch (row.old.flatMap(old.shownPosition(ofList:)), row.new.flatMap(new.shownPosition(ofList:))) {
            case let (o?, nil):
                deletedOld.append(o)
                batch.deletes.append(.init(path: old.path(ofShown: o), id: row.change.id))
            case let (nil, n?):
                insertedNew.append(n)
                batch.inserts.append(.init(path: new.path(ofShown: n), id: row.change.id, primaryKey: row.change.primaryKey))
            case let (o?, n?):
                let changedSection = try row.keyChanged && SectionList.prefix(of: row.oldKey!, components: options.sectionBy)
                    != SectionList.prefix(of: row.newKey!, components: options.sectionBy)
                survivors.append(Survivor(row: index, position: .init(old: o, new: n, changedSection: changedSection),
                                          keyChanged: row.keyChanged))
            case (nil, nil):
                break
            }
        }
        let pushedKeys = indexesOnly ? nil : try resolved.rowKeys(at: window.pushedOut.map(\.new) + window.pushedIn, reverse: query.reverse, in: tx)
        for (i, pushed) in window.pushedOut.enumerated() {
            let o = old.shownPosition(ofList: pushed.old)!
            deletedOld.append(o)
            batch.deletes.append(.init(path: old.path(ofShown: o), id: pushedKeys?[i].id ?? .null))
        }
        for (i, position) in window.pushedIn.enumerated() {
            let n = new.shownPosition(ofList: position)!
            insertedNew.append(n)
            let key = pushedKeys?[window.pushedOut.count + i] ?? .none
            batch.inserts.append(.init(path: new.path(ofShown: n), id: key.id, primaryKey: key.primaryKey))
        }

        // Moves, then updates of the rest.
        deletedOld.sort()
        insertedNew.sort()
        let movable = survivors.indices.filter { survivors[$0].keyChanged }
        let moved = Set(MoveDetection.moves(changedKeys: movable.map { survivors[$0].position }, deletedOld: deletedOld,
                                            insertedNew: insertedNew).map { movable[$0] })
        for (i, survivor) in survivors.enumerated() {
            let moves = moved.contains(i), change = rows.rows[survivor.row].change
            guard moves || filter.passes(change) else { continue }
            let pair = RowChanges.Pair(from: old.path(ofShown: survivor.position.old), to: new.path(ofShown: survivor.position.new),
                                       id: change.id, primaryKey: change.primaryKey, fields: filter.names(of: change))
            if moves { batch.moves.append(pair) } else { batch.updates.append(pair) }
        }
        batch.sort()
        layout = new
        sequence = head
        return batch
    }

    /// A changed row shown before and after the span: its shown positions, and whether its key
    /// changed (only then may it move).
    private struct Survivor {
        /// The row's index in ``ChangedRows/rows``.
        var row: Int
        var position: MoveDetection.Candidate
        var keyChanged: Bool
    }

    // MARK: Changed records

    /// The folded changes, with the rows that show a changed related record: an update whose
    /// changed field is the related entity's name. Those rows are found through the foreign-key
    /// index, O(log n) each.
    private func changedRecords(_ folded: FoldedChanges, entity: EntitySchema, range: KeyRange, in tx: ReadTransaction) throws -> [ChangedRecord] {
        var changes = folded.records
        guard !folded.related.isEmpty else { return Array(changes.values) }
        let watched = try entity.index(named: query.index)
        for related in options.related {
            guard let changed = folded.related[try tx.entity(related.entity).catalog.id] else { continue }
            for relatedID in changed {
                for row in try tx.rowKeys(entity: query.entity, index: related.foreignKeyIndex, range: .prefix(relatedID)) {
                    if changes[row.primaryKey] != nil {
                        changes[row.primaryKey]!.related.insert(related.entity)
                        continue
                    }
                    guard let fields = try tx.record(entity: query.entity, primaryKey: row.primaryKey, id: row.id),
                          let key = try watched.key(of: fields, primaryKey: row.primaryKey, in: range) else { continue }
                    changes[row.primaryKey] = ChangedRecord(id: row.id, primaryKey: row.primaryKey, oldKey: key, newKey: key,
                                                            related: [related.entity], allFields: false)
                }
            }
        }
        return Array(changes.values)
    }

    /// The watch options' `fields` by catalog number, for one batch: updates are filtered by the
    /// numbers the journal holds, and only the rows a batch reports get names.
    private struct FieldFilter {
        let entity: EntitySchema
        /// Nil: every update passes.
        let fieldIDs: Set<UInt32>?
        let related: Set<String>

        init(_ names: Set<String>?, entity: EntitySchema) {
            self.entity = entity
            fieldIDs = names.map { Set($0.compactMap { name in entity.fieldTable.position(named: name).map { entity.fieldTable.ids[$0] } }) }
            related = names ?? []
        }

        /// Whether an update of `change` passes the filter.
        func passes(_ change: ChangedRecord) -> Bool {
            guard let fieldIDs, !change.allFields else { return true }
            return !change.fieldIDs.isDisjoint(with: fieldIDs) || !change.related.isDisjoint(with: related)
        }

        /// The changed fields an update or move reports, by name (empty when any field may
        /// have changed).
        func names(of change: ChangedRecord) -> [String] {
            guard !change.allFields else { return [] }
            return Set(change.fieldIDs.map { entity.fieldTable.name(id: $0) ?? "#\($0)" }).union(change.related).sorted()
        }
    }

    // MARK: Reading the shown snapshot

    /// The path in the snapshot the consumer holds of the row whose entry key is `key` (nil when
    /// it is not shown).
    func path(ofKey key: [UInt8], in tx: ReadTransaction, _ resolved: ReadTransaction.ResolvedQuery) throws -> RowPath? {
        guard let layout, resolved.holds(key: key) else { return nil }
        return layout.path(ofList: try resolved.position(ofKey: key, reverse: query.reverse, in: tx))
    }
}
