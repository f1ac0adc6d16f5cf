import Feedstore
import FeedstoreDemo
import Foundation

/// The demo's `Message` with its indexes declared by field name: the same entity for the store
/// as the demo's declaration by key paths, for tests that compare the two.
public struct MessageByName: Entity {
    public var id: UInt64
    public var folder: Int64
    public var date: Date
    public var title: String
    public var isRead: Bool
    public var contactId: UInt64

    public static let entityName = "Message"
    public static let indexes = [
        IndexDefinition("byFolderDate", [.ascending("folder"), .descending("date")]),
        IndexDefinition("unreadByDate", [.descending("date")], where: .field("isRead") == false),
        IndexDefinition("byContact", [.ascending("contactId")]),
    ]

    public init(_ message: Message) {
        (id, folder, date, title, isRead, contactId) =
            (message.id, message.folder, message.date, message.title, message.isRead, message.contactId)
    }
}
