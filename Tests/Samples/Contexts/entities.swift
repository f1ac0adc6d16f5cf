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

    static let byFolderDate = index(\.folder, \.date.descending)
    static let unreadByDate = index("unreadByDate", \.date.descending, where: \.isRead == false)
    static let byContact = index("byContact", \.contactId)
    static let indexes = [byFolderDate.definition, unreadByDate.definition, byContact.definition]
}

struct Contact: Entity {
    var id: UInt64
    var name: String
    var email: String

    static let byName = index(\.name)
    static let byEmail = index(\.email, unique: true)
    static let indexes = [byName.definition, byEmail.definition]
}
