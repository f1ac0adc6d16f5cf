#if canImport(UIKit)
import UIKit

// The thin part that needs UIKit: applying TableUpdates (plain Swift, tested on every platform)
// to a view in one batch update.

extension UITableView {
    /// Applies `updates` in one `performBatchUpdates`, after the data source has taken the batch
    /// (a ``LazyLiveList`` or a ``SectionedMirror`` that applied it). An initial batch or a reset
    /// reloads the table.
    @MainActor
    public func performBatchUpdates(_ updates: TableUpdates, animation: UITableView.RowAnimation = .automatic,
                                    completion: ((Bool) -> Void)? = nil)
    {
        if updates.reloadsEverything {
            reloadData()
            completion?(true)
            return
        }
        performBatchUpdates({
            self.deleteRows(at: updates.deletedRows, with: animation)
            self.deleteSections(updates.deletedSections, with: animation)
            self.insertSections(updates.insertedSections, with: animation)
            self.insertRows(at: updates.insertedRows, with: animation)
            for move in updates.movedRows { self.moveRow(at: move.from, to: move.to) }
            self.reloadRows(at: updates.reloadedRows, with: .none)
        }, completion: { finished in
            if !updates.reconfigure.isEmpty {
                if #available(iOS 15, tvOS 15, *) { self.reconfigureRows(at: updates.reconfigure) } else { self.reloadRows(at: updates.reconfigure, with: .none) }
            }
            completion?(finished)
        })
    }
}

extension UICollectionView {
    /// Applies `updates` in one `performBatchUpdates`, after the data source has taken the batch.
    /// An initial batch or a reset reloads the collection.
    @MainActor
    public func performBatchUpdates(_ updates: TableUpdates, completion: ((Bool) -> Void)? = nil) {
        if updates.reloadsEverything {
            reloadData()
            completion?(true)
            return
        }
        performBatchUpdates({
            self.deleteItems(at: updates.deletedRows)
            self.deleteSections(updates.deletedSections)
            self.insertSections(updates.insertedSections)
            self.insertItems(at: updates.insertedRows)
            for move in updates.movedRows { self.moveItem(at: move.from, to: move.to) }
            self.reloadItems(at: updates.reloadedRows)
        }, completion: { finished in
            if !updates.reconfigure.isEmpty {
                if #available(iOS 15, tvOS 15, *) { self.reconfigureItems(at: updates.reconfigure) } else { self.reloadItems(at: updates.reconfigure) }
            }
            completion?(finished)
        })
    }
}
#endif

#if canImport(UIKit)
@available(iOS 15, tvOS 15, *)
extension NSDiffableDataSourceSnapshot: DiffableSnapshotEditing {}
#endif
