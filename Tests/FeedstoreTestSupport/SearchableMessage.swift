import Feedstore
import FeedstoreDemo
import Foundation

/// The demo feed's messages with a text index over their titles: the same entity (`Message`)
/// and records, one index more, so the demo feed's writes keep it.
public struct SearchableMessage: Entity, Equatable {
    public var id: UInt64
    public var folder: Int64
    public var date: Date
    public var title: String
    public var isRead: Bool
    public var contactId: UInt64

    public static let entityName = "Message"
    /// Messages by the words of their titles, newest first.
    public static let byText = textIndex(\.title, order: \.date.descending)
    public static let indexes = Message.indexes + [byText.definition]

    /// The demo feed's entities, with messages searchable.
    public static let entities: [any Entity.Type] = [Contact.self, SearchableMessage.self]
}
