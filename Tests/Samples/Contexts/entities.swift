// The mail feed's entities, for the documentation's samples marked `context entities`.
import Feedstore
import Foundation

struct Message: Entity {
    var id: UInt64
    var folder: Int64
    var date: Date
    var title: String
    var isRead: Bool
    var contactId: UInt64

    static let indexes = [
        IndexDefinition("byFolderDate", [.ascending("folder"), .descending("date")]),
        IndexDefinition("unreadByDate", [.descending("date")], where: .field("isRead") == false),
        IndexDefinition("byContact", [.ascending("contactId")]),
    ]
}

struct Contact: Entity {
    var id: UInt64
    var name: String
    var email: String

    static let indexes = [IndexDefinition("byEmail", ["email"], unique: true)]
}
