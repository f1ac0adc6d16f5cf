import Observation

/// A live list of any length for SwiftUI and UIKit: a random-access collection over an
/// indexes-only watcher that reads rows only when they are asked for.
///
/// The list knows its count and sections at once (the counted index answers them), and decodes
/// a row when a view reads it, a page of rows in one walk of the index, into a cache of about
/// `cacheSize` rows (those nearest the last one read). Each batch moves the cached rows as it
/// moves the rows of the list, and drops those it deletes, moves or updates, so the list never
/// shows a stale or misplaced row; memory stays O(cache) at ten million rows.
///
/// Batches are taken on the main actor, in the same step that applies them, so the rows read
/// always come from the snapshot the count and sections describe. Observation tracks ``count``,
/// ``sections`` and each row read: a view is updated when a row it read changes or shifts, not
/// when a row it never read does.
///
/// ```swift
/// @State var inbox = LazyLiveList(store: store, query: Query(Message.self, index: "byFolderDate"))
///
/// List(inbox) { message in Text(message.title) }                 // SwiftUI, Identifiable rows
///
/// func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int {
///     inbox.sections[section].count
/// }
/// let message = inbox[inbox.position(of: RowPath(section: 0, row: 12))]  // UIKit
/// ```
///
/// Reading a row the store cannot give (it was closed, or its file is damaged) stops the list:
/// ``error`` says why, and the list becomes empty. Use ``element(at:)-(Int)`` to handle the error
/// where the row is read instead.
@MainActor
public final class LazyLiveList<E: Entity>: Observable {
    /// A section of the list: the index components its rows share, its row count, and the
    /// position of its first row in the list.
    public struct Section: Sendable, Hashable {
        public var key: [FieldValue]
        public var count: Int
        public var start: Int
    }

    /// Rows in all sections.
    public var count: Int {
        observation.readShape()
        return cache.count
    }

    /// The sections, in order (one, with an empty key, for an unsectioned query).
    public var sections: [Section] {
        observation.readShape()
        return shownSections
    }

    /// The journal sequence the list shows. Not observed by itself: it moves with every batch,
    /// including those that change nothing a view read.
    public var sequence: UInt64 { shownSequence }

    /// The error that stopped the list, if any.
    public var error: (any Error)? {
        observation.readShape()
        return stoppedBy
    }

    private let watcher: IndexWatcher<E>
    private var cache: LazyRowCache<E>
    private let observation = LazyListObservation()
    private var shownSections: [Section] = []
    private var shownSequence: UInt64 = 0
    private var stoppedBy: (any Error)?
    private var task: Task<Void, Never>?
    /// Pages of rows read since the last batch, which observers may depend on.
    private var observedPages: Set<Int> = []
    private var stopped = false

    /// Starts following `query`; ``count`` and ``sections`` fill in with the first batch, taken
    /// at once. Batches after it are taken as commits change what the query shows.
    /// - Parameters:
    ///   - store: the store to follow.
    ///   - query: the rows, in order.
    ///   - options: sections, a window, the fields whose updates count.
    ///   - cacheSize: the rows kept decoded (up to a quarter more between evictions).
    ///   - pageSize: the rows read at once when a row is missing.
    public init(store: Store, query: Query<E>, options: WatchOptions = WatchOptions(), cacheSize: Int = 1_000, pageSize: Int = 50) {
        watcher = store.watchIndexes(query, options: options)
        cache = LazyRowCache(capacity: cacheSize, pageSize: pageSize)
        do {
            try update()
        } catch {
            fail(error)
        }
        task = Task { @MainActor [weak self, watcher] in
            while !Task.isCancelled, !watcher.isCancelled {
                await watcher.waitForChanges()
                guard let self, !self.stopped else { return }
                do {
                    try self.update()
                } catch {
                    self.fail(error)
                    return
                }
            }
        }
    }

    /// Called on the main actor after each batch the list applies, with the batch as UIKit and
    /// AppKit take it, for a table or collection view whose data source the list is:
    /// `inbox.onUpdates = { tableView.performBatchUpdates($0) }`. The list has the batch's rows
    /// when it is called, as `performBatchUpdates` requires. Not called for the first batch, which
    /// the list takes as it is made (before a view asks for its rows).
    public var onUpdates: ((TableUpdates) -> Void)?

    /// Takes and applies every batch available now; returns whether the list changed. The list
    /// does this by itself as commits arrive; call it to catch up at once (after a write of
    /// one's own, say).
    @discardableResult
    public func update() throws -> Bool {
        guard !stopped else { return false }
        var changed = false
        while let batch = try watcher.poll() {
            apply(batch)
            changed = true
        }
        return changed
    }

    private func apply(_ batch: IndexBatch) {
        let changes = cache.apply(batch, layout: watcher.shownLayout)
        let layout = cache.layout
        let newSections = layout.shown.sections.enumerated().map {
            Section(key: $0.element.key, count: $0.element.count, start: layout.shownPosition(of: RowPath(section: $0.offset, row: 0)))
        }
        let reshaped = newSections != shownSections
        shownSections = newSections
        shownSequence = batch.toSequence
        if reshaped { observation.shapeChanged() }
        // Only pages read since the last batch can have observers; they register again as they read.
        let touched = observedPages.filter { changes.overlaps($0 * cache.pageSize ..< ($0 + 1) * cache.pageSize) }
        observedPages.subtract(touched)
        for page in touched { observation.changed(page: page) }
        if let onUpdates, !batch.isEmpty || batch.isReset { onUpdates(TableUpdates(batch)) }
    }

    /// The row at `position` (from 0, across sections), decoded from the cache or with its page.
    /// Traps outside `0..<count`, as an array does, and when the store cannot give the row (see
    /// the type's notes; ``element(at:)-(Int)`` throws instead).
    public subscript(position: Int) -> E {
        do {
            return try element(at: position)
        } catch {
            fail(error)
            fatalError("LazyLiveList cannot read row \(position): \(error)")
        }
    }

    /// The row at `position`, decoded from the cache or with its page.
    /// - Complexity: O(1) from the cache; O(log n + page) otherwise.
    public func element(at position: Int) throws -> E {
        precondition(position >= 0 && position < cache.count, "row \(position) outside a list of \(cache.count)")
        let page = cache.page(containing: position)
        observe(page: position / cache.pageSize)
        if let row = cache.row(at: position) { return row }
        // A page may cross sections: the watcher reads it section by section.
        let read = try watcher.objects(at: page).map(\.object)
        guard read.count == page.count else {
            throw FeedstoreError.corruptData(what: "index \(E.entityName)", reason: "fewer rows than its counts say")
        }
        cache.store(read, from: page.lowerBound)
        return read[position - page.lowerBound]
    }

    /// The row at `path`.
    public func element(at path: RowPath) throws -> E { try element(at: position(of: path)) }

    /// The position in the list of the row at `path`.
    public func position(of path: RowPath) -> Int { cache.layout.shownPosition(of: path) }

    /// The path of the row at `position`.
    public func path(of position: Int) -> RowPath { cache.layout.path(ofShown: position) }

    /// The position of the record with `id`; nil when the list does not show it.
    /// - Complexity: O(log n).
    public func position(of id: E.ID) throws -> Int? {
        try watcher.path(of: id).map { cache.layout.shownPosition(of: $0) }
    }

    /// Shows another window of the query (lists opened with a window only), at once.
    /// - Complexity: O(log n + r) for r rows entering or leaving the window.
    public func setWindow(offset: Int, limit: Int) throws {
        watcher.setWindow(offset: offset, limit: limit)
        try update()
    }

    /// The rows currently decoded (about the cache size at most).
    public var cachedCount: Int { cache.slots.count }

    /// The decoded rows by position, and what the cache must hold to be consistent (for tests).
    var cachedRows: [Int: E] { cache.rows }
    func checkInvariants() -> [String] { cache.checkInvariants() }

    /// Stops following the query: the list keeps showing the snapshot of its last batch, and the
    /// rows not read yet still come from that snapshot (which stays open until the list goes).
    public func stop() {
        stopped = true
        task?.cancel()
    }

    private func fail(_ error: any Error) {
        stop()
        watcher.cancel()
        stoppedBy = error
        cache = LazyRowCache(capacity: cache.capacity, pageSize: cache.pageSize)
        shownSections = []
        observation.shapeChanged()
    }

    private func observe(page: Int) {
        observedPages.insert(page)
        observation.read(page: page)
    }

    isolated deinit {
        watcher.cancel()
        task?.cancel()
    }
}

extension LazyLiveList: @MainActor RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { count }
}
