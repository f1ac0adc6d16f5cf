// A stand-in for the parts of AppKit that Feedstore's AppKit adapter uses, with AppKit's
// declarations (names, labels, main-actor isolation), so that the adapter type-checks on Linux
// under Swift 6's strict concurrency. Nothing here runs.
@_exported import Foundation

@MainActor open class NSView {
    public init() {}
}

@MainActor open class NSCollectionView: NSView {
    public func reloadData() {}
    public func performBatchUpdates(_ updates: (() -> Void)?, completionHandler: ((Bool) -> Void)? = nil) {}
    public func insertSections(_ sections: IndexSet) {}
    public func deleteSections(_ sections: IndexSet) {}
    public func insertItems(at indexPaths: Set<IndexPath>) {}
    public func deleteItems(at indexPaths: Set<IndexPath>) {}
    public func moveItem(at indexPath: IndexPath, to newIndexPath: IndexPath) {}
    public func reloadItems(at indexPaths: Set<IndexPath>) {}
}
