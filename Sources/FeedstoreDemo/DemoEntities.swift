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

    /// A folder's messages, newest first: one section per folder.
    public static let byFolderDate = index(\.folder, \.date.descending)
    /// Unread messages, newest first.
    public static let unreadByDate = index("unreadByDate", \.date.descending, where: \.isRead == false)
    /// Messages by contact: the foreign key that related-record watchers follow.
    public static let byContact = index("byContact", \.contactId)
    public static let indexes = [byFolderDate.definition, unreadByDate.definition, byContact.definition]
}

/// Messages read their stored fields directly; ``CodableMessage`` reads the same records
/// through `Codable`, for comparison.
extension Message: StoredFieldsDecodable {
    public init(storedFields fields: borrowing StoredFields) throws {
        id = try fields.decode(UInt64.self, "id")
        folder = try fields.decode(Int64.self, "folder")
        date = try fields.decode(Date.self, "date")
        title = try fields.decode(String.self, "title")
        isRead = try fields.decode(Bool.self, "isRead")
        contactId = try fields.decode(UInt64.self, "contactId")
    }
}

/// ``Message`` read through `Codable` only: the same entity and fields, without
/// `StoredFieldsDecodable`. It declares the fields again rather than holding a `Message`, so that
/// its reads cost what `Codable`'s synthesized `init(from:)` costs, with no wrapper's call on top.
public struct CodableMessage: Entity, Equatable {
    public var id: UInt64
    public var folder: Int64
    public var date: Date
    public var title: String
    public var isRead: Bool
    public var contactId: UInt64

    public static let entityName = "Message"
    public static let indexes = Message.indexes
}

/// The next version of ``Message``, for the migration demo: `title` is renamed `subject`, and a
/// new field, `words`, counts the subject's words. Stored under the same entity name.
public struct MessageV2: Entity, Equatable {
    public var id: UInt64
    public var folder: Int64
    public var date: Date
    public var subject: String
    public var words: Int
    public var isRead: Bool
    public var contactId: UInt64

    public static let entityName = "Message"
    public static let indexes = Message.indexes + [IndexDefinition("bySubject", ["subject"])]

    public init(id: UInt64, folder: Int64, date: Date, subject: String, isRead: Bool, contactId: UInt64) {
        self.id = id
        self.folder = folder
        self.date = date
        self.subject = subject
        self.words = subject.split(separator: " ").count
        self.isRead = isRead
        self.contactId = contactId
    }

    /// The migration from ``Message``; a record already in the new shape is kept as it is.
    public static func migrated(_ old: MigrationRecord) throws -> MessageV2 {
        if old.fields["subject"] != nil { return try old.decode(as: MessageV2.self) }
        let v1 = try old.decode(as: Message.self)
        return MessageV2(id: v1.id, folder: v1.folder, date: v1.date, subject: v1.title, isRead: v1.isRead, contactId: v1.contactId)
    }
}
