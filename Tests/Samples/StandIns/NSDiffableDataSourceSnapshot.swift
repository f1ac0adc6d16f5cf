// NSDiffableDataSourceSnapshot as UIKit and AppKit both declare it: compiled into both stand-ins.
import Foundation

public struct NSDiffableDataSourceSnapshot<SectionIdentifierType: Hashable, ItemIdentifierType: Hashable> {
    public init() {}
    public var sectionIdentifiers: [SectionIdentifierType] { [] }
    public func itemIdentifiers(inSection identifier: SectionIdentifierType) -> [ItemIdentifierType] { [] }
    public mutating func appendSections(_ identifiers: [SectionIdentifierType]) {}
    public mutating func insertSections(_ identifiers: [SectionIdentifierType], beforeSection toIdentifier: SectionIdentifierType) {}
    public mutating func deleteSections(_ identifiers: [SectionIdentifierType]) {}
    public mutating func appendItems(_ identifiers: [ItemIdentifierType], toSection sectionIdentifier: SectionIdentifierType? = nil) {}
    public mutating func insertItems(_ identifiers: [ItemIdentifierType], beforeItem beforeIdentifier: ItemIdentifierType) {}
    public mutating func deleteItems(_ identifiers: [ItemIdentifierType]) {}
    public mutating func reconfigureItems(_ identifiers: [ItemIdentifierType]) {}
}
