import Feedstore
import Foundation

/// A person messages come from.
public struct Contact: Entity, Equatable {
    public var id: UInt64
    public var name: String

    public init(id: UInt64, name: String) {
        self.id = id
        self.name = name
    }
}

/// A message in a mail-like feed: one section per folder, newest first.
public struct Message: Entity, Equatable {
    public var id: UInt64
    public var folder: Int64
    public var date: Date
    public var title: String
    public var isRead: Bool
    public var contactId: UInt64

    public init(id: UInt64, folder: Int64, date: Date, title: String, isRead: Bool, contactId: UInt64) {
        self.id = id
        self.folder = folder
        self.date = date
        self.title = title
        self.isRead = isRead
        self.contactId = contactId
    }

    public static let indexes: [IndexDefinition] = [
        IndexDefinition("byFolderDate", [.ascending("folder"), .descending("date")]),
        IndexDefinition("unreadByDate", [.descending("date")], where: .field("isRead") == false),
        IndexDefinition("byContact", [.ascending("contactId")]),
    ]
}
