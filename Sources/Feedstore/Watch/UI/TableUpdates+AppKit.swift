#if canImport(AppKit) && !targetEnvironment(macCatalyst)
import AppKit

// The thin part that needs AppKit: applying TableUpdates (plain Swift, tested on every platform)
// to a collection view in one batch update.

extension NSCollectionView {
    /// Applies `updates` in one `performBatchUpdates`, after the data source has taken the batch
    /// (a ``LazyLiveList`` or a ``SectionedMirror`` that applied it). An initial batch or a reset
    /// reloads the collection.
    @MainActor
    public func performBatchUpdates(_ updates: TableUpdates, completion: ((Bool) -> Void)? = nil) {
        if updates.reloadsEverything {
            reloadData()
            completion?(true)
            return
        }
        performBatchUpdates({
            self.deleteItems(at: Set(updates.deletedRows))
            self.deleteSections(updates.deletedSections)
            self.insertSections(updates.insertedSections)
            self.insertItems(at: Set(updates.insertedRows))
            for move in updates.movedRows { self.moveItem(at: move.from, to: move.to) }
            self.reloadItems(at: Set(updates.reloadedRows))
        }, completionHandler: { finished in
            if !updates.reconfigure.isEmpty { self.reloadItems(at: Set(updates.reconfigure)) }
            completion?(finished)
        })
    }
}
#endif

#if canImport(AppKit) && !targetEnvironment(macCatalyst)
@available(macOS 12, *)
extension NSDiffableDataSourceSnapshot: DiffableSnapshotEditing {}
#endif
