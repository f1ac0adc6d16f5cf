import Foundation

/// A batch in the form UIKit's and AppKit's batch updates take: section indexes and index paths,
/// deletes and reloads at old positions, inserts and move destinations at new ones, all in one
/// `performBatchUpdates`. Made from any ``RowChangeBatch``; the view extensions (on platforms
/// with UIKit) apply it.
///
/// ```swift
/// for try await batch in watcher {
///     tableView.performBatchUpdates(batch.tableUpdates)   // UIKit: one call per batch
/// }
/// ```
///
/// A moved row whose content changed is one move, never also a reload (UIKit refuses both for
/// one row): configure its cell again at the destination after the updates (``reconfigure``).
public struct TableUpdates: Sendable, Hashable {
    /// A row that moved: its old index path and its new one.
    public struct Move: Sendable, Hashable {
        public var from: IndexPath
        public var to: IndexPath
    }

    /// Old indexes of sections that are gone.
    public var deletedSections = IndexSet()
    /// New indexes of sections that arrived.
    public var insertedSections = IndexSet()
    /// Old index paths of rows that left.
    public var deletedRows: [IndexPath] = []
    /// New index paths of rows that arrived.
    public var insertedRows: [IndexPath] = []
    /// Rows that moved, old index path to new.
    public var movedRows: [Move] = []
    /// Old index paths of rows whose content changed and did not move (UIKit's reloads).
    public var reloadedRows: [IndexPath] = []
    /// New index paths of moved rows whose content also changed, to configure again after the
    /// updates.
    public var reconfigure: [IndexPath] = []
    /// The batch replaces everything shown (an initial batch or a reset): reload the view
    /// instead of applying the lists.
    public var reloadsEverything = false

    /// Whether applying the updates changes nothing.
    public var isEmpty: Bool {
        deletedSections.isEmpty && insertedSections.isEmpty && deletedRows.isEmpty && insertedRows.isEmpty && movedRows.isEmpty
            && reloadedRows.isEmpty && reconfigure.isEmpty && !reloadsEverything
    }

    /// The updates of `batch`.
    public init<Batch: RowChangeBatch>(_ batch: Batch) {
        self.init(changes: batch)
    }

    /// The updates of `batch`, with the moved rows whose content changed in ``reconfigure``.
    public init<E: Entity>(_ batch: ChangeBatch<E>) {
        self.init(changes: batch)
        reconfigure = batch.moves.filter { !$0.fields.isEmpty }.map(\.to.indexPath)
    }

    private init<Batch: RowChangeBatch>(changes batch: Batch) {
        reloadsEverything = batch.isInitial || batch.isReset
        deletedSections = IndexSet(batch.sectionDeletes)
        insertedSections = IndexSet(batch.sectionInserts.map(\.index))
        for change in batch.rowChanges {
            switch change.kind {
            case .delete: deletedRows.append(change.from!.indexPath)
            case .insert: insertedRows.append(change.to!.indexPath)
            case .move: movedRows.append(Move(from: change.from!.indexPath, to: change.to!.indexPath))
            case .update: reloadedRows.append(change.from!.indexPath)
            }
        }
    }
}

extension RowChangeBatch {
    /// The batch as UIKit's batch updates take it.
    public var tableUpdates: TableUpdates { TableUpdates(self) }
}

extension ChangeBatch {
    /// The batch as UIKit's batch updates take it, moved rows whose content changed included.
    public var tableUpdates: TableUpdates { TableUpdates(self) }
}

extension RowPath {
    /// The path of an index path's section and row (its first two indexes).
    public init(_ indexPath: IndexPath) {
        self.init(section: indexPath[0], row: indexPath[1])
    }

    /// The index path of this section and row.
    public var indexPath: IndexPath { IndexPath(indexes: [section, row]) }
}
