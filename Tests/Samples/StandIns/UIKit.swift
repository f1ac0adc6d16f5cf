// A stand-in for the parts of UIKit that the documentation's samples and Feedstore's UIKit
// adapter use, with UIKit's declarations (names, labels, main-actor isolation), so that the
// samples type-check on Linux under Swift 6's strict concurrency. Nothing here runs.
@_exported import Foundation

extension IndexPath {
    public init(row: Int, section: Int) { self.init(indexes: [section, row]) }
    public init(item: Int, section: Int) { self.init(indexes: [section, item]) }
    public var row: Int { self[1] }
    public var item: Int { self[1] }
    public var section: Int { self[0] }
}

@MainActor open class UIResponder {
    public init() {}
}

@MainActor open class UIView: UIResponder {}

@MainActor open class UIViewController: UIResponder {
    open func viewDidLoad() {}
    open func viewWillAppear(_ animated: Bool) {}
    open func viewDidDisappear(_ animated: Bool) {}
}

@MainActor open class UITableViewCell: UIView {
    public var textLabel: UILabel? { nil }
    public var contentConfiguration: (any UIContentConfiguration)?
    public func defaultContentConfiguration() -> UIListContentConfiguration { UIListContentConfiguration() }
}

@MainActor open class UILabel: UIView {
    public var text: String?
}

public protocol UIContentConfiguration {}

public struct UIListContentConfiguration: UIContentConfiguration {
    public var text: String?
    public var secondaryText: String?
}

@MainActor public protocol UITableViewDataSource: AnyObject {
    func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int
    func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell
    func numberOfSections(in tableView: UITableView) -> Int
}

extension UITableViewDataSource {
    public func numberOfSections(in tableView: UITableView) -> Int { 1 }
}

@MainActor open class UITableView: UIView {
    public enum RowAnimation: Int, Sendable { case fade, right, left, top, bottom, none, middle, automatic }

    public weak var dataSource: (any UITableViewDataSource)?

    public func reloadData() {}
    public func performBatchUpdates(_ updates: (() -> Void)?, completion: ((Bool) -> Void)? = nil) {}
    public func insertSections(_ sections: IndexSet, with animation: RowAnimation) {}
    public func deleteSections(_ sections: IndexSet, with animation: RowAnimation) {}
    public func insertRows(at indexPaths: [IndexPath], with animation: RowAnimation) {}
    public func deleteRows(at indexPaths: [IndexPath], with animation: RowAnimation) {}
    public func moveRow(at indexPath: IndexPath, to newIndexPath: IndexPath) {}
    public func reloadRows(at indexPaths: [IndexPath], with animation: RowAnimation) {}
    public func reconfigureRows(at indexPaths: [IndexPath]) {}
    public func dequeueReusableCell(withIdentifier identifier: String, for indexPath: IndexPath) -> UITableViewCell { UITableViewCell() }
}

@MainActor open class UITableViewController: UIViewController, UITableViewDataSource {
    public var tableView: UITableView = UITableView()
    open func numberOfSections(in tableView: UITableView) -> Int { 1 }
    open func tableView(_ tableView: UITableView, numberOfRowsInSection section: Int) -> Int { 0 }
    open func tableView(_ tableView: UITableView, cellForRowAt indexPath: IndexPath) -> UITableViewCell { UITableViewCell() }
}

@MainActor open class UICollectionView: UIView {
    public func reloadData() {}
    public func performBatchUpdates(_ updates: (() -> Void)?, completion: ((Bool) -> Void)? = nil) {}
    public func insertSections(_ sections: IndexSet) {}
    public func deleteSections(_ sections: IndexSet) {}
    public func insertItems(at indexPaths: [IndexPath]) {}
    public func deleteItems(at indexPaths: [IndexPath]) {}
    public func moveItem(at indexPath: IndexPath, to newIndexPath: IndexPath) {}
    public func reloadItems(at indexPaths: [IndexPath]) {}
    public func reconfigureItems(at indexPaths: [IndexPath]) {}
}
