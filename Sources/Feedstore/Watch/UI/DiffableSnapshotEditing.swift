/// What applying a batch to a diffable data source's snapshot needs of the snapshot: the
/// identifier-based edits of `NSDiffableDataSourceSnapshot`, which conforms where UIKit or AppKit
/// exists. Sections are identified by their key (the index components they group by), rows by
/// their record's primary key.
public protocol DiffableSnapshotEditing {
    associatedtype SectionIdentifierType: Hashable
    associatedtype ItemIdentifierType: Hashable
    var sectionIdentifiers: [SectionIdentifierType] { get }
    func itemIdentifiers(inSection identifier: SectionIdentifierType) -> [ItemIdentifierType]
    mutating func appendSections(_ identifiers: [SectionIdentifierType])
    mutating func insertSections(_ identifiers: [SectionIdentifierType], beforeSection toIdentifier: SectionIdentifierType)
    mutating func deleteSections(_ identifiers: [SectionIdentifierType])
    mutating func appendItems(_ identifiers: [ItemIdentifierType], toSection sectionIdentifier: SectionIdentifierType?)
    mutating func insertItems(_ identifiers: [ItemIdentifierType], beforeItem beforeIdentifier: ItemIdentifierType)
    mutating func deleteItems(_ identifiers: [ItemIdentifierType])
    mutating func reconfigureItems(_ identifiers: [ItemIdentifierType])
}

extension DiffableSnapshotEditing {
    /// Applies a typed batch: removes the rows it deletes and moves, the sections it deletes,
    /// inserts its sections and then its rows and move destinations at their new positions, and
    /// reconfigures the rows whose content changed. An initial batch or a reset replaces
    /// everything. The snapshot must show the batch's old state.
    /// - Complexity: O(k · r) for k rows changed in sections of r rows (a snapshot holds every
    ///   identifier; for lists of any length, use ``LazyLiveList`` and ``TableUpdates``).
    public mutating func apply<E: Entity>(_ batch: ChangeBatch<E>)
        where SectionIdentifierType == [FieldValue], ItemIdentifierType == E.ID
    {
        if batch.isInitial || batch.isReset {
            deleteSections(sectionIdentifiers)
        }
        deleteItems(batch.deletes.map(\.id) + batch.moves.map(\.id))
        let deletedSections = batch.sectionDeletes.map { sectionIdentifiers[$0] }
        deleteSections(deletedSections)
        for section in batch.sectionInserts.sorted(by: { $0.index < $1.index }) {
            let sections = sectionIdentifiers
            if section.index < sections.count {
                insertSections([section.key], beforeSection: sections[section.index])
            } else {
                appendSections([section.key])
            }
        }
        let arriving = (batch.inserts.map { ($0.path, $0.id) } + batch.moves.map { ($0.to, $0.id) }).sorted { $0.0 < $1.0 }
        for (path, id) in arriving {
            let section = sectionIdentifiers[path.section]
            let items = itemIdentifiers(inSection: section)
            if path.row < items.count {
                insertItems([id], beforeItem: items[path.row])
            } else {
                appendItems([id], toSection: section)
            }
        }
        let changed = batch.updates.map(\.id) + batch.moves.filter { !$0.fields.isEmpty }.map(\.id)
        if !changed.isEmpty { reconfigureItems(changed) }
    }
}
