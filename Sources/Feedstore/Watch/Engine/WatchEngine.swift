/// Computes a watcher's batches. Cycle: journal fold → positions → sections → window → moves →
/// batch. The store's ``ChangeFeed`` folds each commit once and hands the engine only the
/// records it concerns; old and new positions come from the counted index in one read
/// transaction, never from re-running the query or reading the window. Cost: O(k log n) for k
/// changed rows, plus the rows a window's edges gain or lose.
///
/// The engine knows records only by name and fields; batches gain their values (typed or
/// dynamic) or their ranges (indexes-only) in the watcher's reducer.
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
    /// The sections of the query's full order in that snapshot; nil until the initial batch.
    private var sections: SectionList?
    /// The sections the consumer holds: the full order's, cut to the window.
    private(set) var shown: SectionList?
    /// The full position of the first row shown.
    private(set) var shownStart = 0
    /// A window the consumer asked for, shown by the next batch.
    private var pendingWindow: WatchWindow?
    /// The next batch must be a reset (the consumer's snapshot could not be kept).
    var resetPending = false

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
        let head = try tx.newestSequence()
        let resolved = try tx.resolve(entity: query.entity, index: query.index, range: query.range)
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
        if sections == nil { return .batch(try snapshot(in: tx, resolved, head: head, reset: false)) }
        if resetPending || folded.overflowed {
            resetPending = false
            return .batch(try snapshot(in: tx, resolved, head: head, reset: true))
        }
        if folded.isEmpty && pendingWindow == nil {
            sequence = head
            return .unchanged
        }
        let changes = try changedRecords(folded, entity: entity, in: tx)
        let batch = try build(ChangedRows(changes, query: resolved, reverse: query.reverse, in: tx), resolved, in: tx, head: head)
        return batch.isEmpty && !batch.movesWindow ? .unchanged : .batch(batch)
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
        let list = try sectionList(in: tx, resolved)
        let visible = WindowProjection.visible(options.window, count: list.rowCount)
        let shown = list.clipped(to: visible)
        var batch = RowChanges(fromSequence: reset ? sequence : 0, toSequence: head, isInitial: !reset, isReset: reset)
        batch.header.window = options.window
        batch.header.sectionInserts = shown.sections.enumerated().map { SectionInsert(index: $0.offset, key: $0.element.key) }
        if indexesOnly {
            batch.insertedSections = shown.sections.enumerated().map { ($0.offset, $0.element.count) }
        } else {
            let keys = try tx.rowKeys(entity: query.entity, index: query.index, range: query.range, reverse: query.reverse,
                                      offset: visible.lowerBound, limit: visible.count)
            batch.inserts = keys.enumerated().map { .init(path: shown.path(ofFlat: $0.offset), id: $0.element.id, primaryKey: $0.element.primaryKey) }
        }
        sections = list
        self.shown = shown
        shownStart = visible.lowerBound
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
        let oldSections = sections!
        guard oldSections.rowCount == rows.oldCount else {
            throw FeedstoreError.corruptData(what: "journal", reason: "the changes since the last batch do not lead back to its row count")
        }
        let oldVisible = WindowProjection.visible(options.window, count: rows.oldCount)
        let movesWindow = takePendingWindow()
        // Sections.
        let newSections = try oldSections.applying(rows, sectionBy: options.sectionBy)
        let newVisible = WindowProjection.visible(options.window, count: rows.newCount)
        let oldShown = oldSections.clipped(to: oldVisible), newShown = newSections.clipped(to: newVisible)
        var batch = RowChanges(fromSequence: sequence, toSequence: head, isInitial: false, isReset: false)
        batch.header.window = options.window
        batch.movesWindow = movesWindow
        if options.sectionBy > 0 { (batch.header.sectionDeletes, batch.header.sectionInserts) = SectionList.difference(from: oldShown, to: newShown) }

        // Window: changed rows by their full positions, untouched rows pushed across its edges.
        let window = WindowProjection(oldVisible: oldVisible, newVisible: newVisible, rows: rows)
        func oldFlat(_ position: Int?) -> Int? { position.flatMap { oldVisible.contains($0) ? $0 - oldVisible.lowerBound : nil } }
        func newFlat(_ position: Int?) -> Int? { position.flatMap { newVisible.contains($0) ? $0 - newVisible.lowerBound : nil } }
        var deletedOld: [Int] = [], insertedNew: [Int] = []
        // Changed rows shown before and after, at their flat positions; only those whose key
        // changed may move.
        var survivors: [Survivor] = []
        let filter = FieldFilter(options.fields, entity: resolved.entity)
        for (index, row) in rows.rows.enumerated() {
            switch (oldFlat(row.old), newFlat(row.new)) {
            case let (o?, nil):
                deletedOld.append(o)
                batch.deletes.append(.init(path: oldShown.path(ofFlat: o), id: row.change.id))
            case let (nil, n?):
                insertedNew.append(n)
                batch.inserts.append(.init(path: newShown.path(ofFlat: n), id: row.change.id, primaryKey: row.change.primaryKey))
            case let (o?, n?):
                let changedSection = try row.keyChanged && SectionList.prefix(of: row.oldKey!, components: options.sectionBy)
                    != SectionList.prefix(of: row.newKey!, components: options.sectionBy)
                survivors.append(Survivor(row: index, position: .init(old: o, new: n, changedSection: changedSection),
                                          keyChanged: row.keyChanged))
            case (nil, nil):
                break
            }
        }
        let pushedKeys = indexesOnly ? nil : try tx.rowKeys(entity: query.entity, index: query.index, range: query.range,
                                                             reverse: query.reverse, at: window.pushedOut.map(\.new) + window.pushedIn)
        for (i, pushed) in window.pushedOut.enumerated() {
            let o = pushed.old - oldVisible.lowerBound
            deletedOld.append(o)
            batch.deletes.append(.init(path: oldShown.path(ofFlat: o), id: pushedKeys?[i].id ?? .null))
        }
        for (i, position) in window.pushedIn.enumerated() {
            let n = position - newVisible.lowerBound
            insertedNew.append(n)
            let key = pushedKeys?[window.pushedOut.count + i] ?? .none
            batch.inserts.append(.init(path: newShown.path(ofFlat: n), id: key.id, primaryKey: key.primaryKey))
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
            let pair = RowChanges.Pair(from: oldShown.path(ofFlat: survivor.position.old), to: newShown.path(ofFlat: survivor.position.new),
                                       id: change.id, primaryKey: change.primaryKey, fields: filter.names(of: change))
            if moves { batch.moves.append(pair) } else { batch.updates.append(pair) }
        }
        batch.sort()
        sections = newSections
        shown = newShown
        shownStart = newVisible.lowerBound
        sequence = head
        return batch
    }

    /// A changed row shown before and after the span: its flat positions, and whether its key
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
    private func changedRecords(_ folded: FoldedChanges, entity: EntitySchema, in tx: ReadTransaction) throws -> [ChangedRecord] {
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
                          let key = try watched.key(of: fields, primaryKey: row.primaryKey) else { continue }
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

    /// The position in the query's order of the row at `path` of the snapshot the consumer
    /// holds (a window's rows start at its offset); nil outside it.
    func queryPosition(of path: RowPath) -> Int? {
        guard let shown, shown.sections.indices.contains(path.section), path.row >= 0,
              path.row < shown.sections[path.section].count else { return nil }
        return shownStart + shown.start(of: path.section) + path.row
    }

    /// The path in the snapshot the consumer holds of the row whose entry key is `key` (nil when
    /// it is not shown).
    func path(ofKey key: [UInt8], in tx: ReadTransaction, _ resolved: ReadTransaction.ResolvedQuery) throws -> RowPath? {
        guard let shown, key.withUnsafeBytes({ resolved.keys.contains($0) }) else { return nil }
        let position = try resolved.position(ofKey: key, reverse: query.reverse, in: tx) - shownStart
        guard position >= 0, position < shown.rowCount else { return nil }
        return shown.path(ofFlat: position)
    }
}
