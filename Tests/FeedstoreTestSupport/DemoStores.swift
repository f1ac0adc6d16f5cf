import Feedstore
import FeedstoreDemo
import Foundation

/// A store of the demo feed at `path`, populated by `feed` with `messages` messages and
/// `contacts` contacts (the feed's next changes continue from there).
public func populatedDemoStore(at path: String, feed: inout DemoFeed, messages: Int, contacts: Int,
                               options: StoreOptions = StoreOptions(durability: .none),
                               entities: [any Entity.Type] = DemoFeed.entities) throws -> Store
{
    let store = try Store(path: path, entities: entities, options: options)
    try feed.populate(store, messages: messages, contacts: contacts)
    return store
}

/// Runs `body` on a demo store in a temporary directory: `messages` messages and `contacts`
/// contacts from a feed of `seed`, then `commits` commits of `perCommit` changes each, synced.
/// (The defaults: the store storectl's read tests use.)
public func withChangedDemoStore(seed: UInt64 = 3, messages: Int = 500, contacts: Int = 20, commits: Int = 10, perCommit: Int = 3,
                                 _ body: (_ path: String, _ store: Store) throws -> Void) throws
{
    try withTemporaryDirectory { dir in
        let path = dir + "/s"
        var feed = DemoFeed(seed: seed)
        let store = try populatedDemoStore(at: path, feed: &feed, messages: messages, contacts: contacts)
        for _ in 0..<commits { _ = try store.write { tx in try feed.mutate(tx, count: perCommit, contacts: UInt64(contacts)) } }
        try store.sync()
        try body(path, store)
    }
}

/// The same, populated by a feed of `seed`.
public func populatedDemoStore(at path: String, seed: UInt64, messages: Int, contacts: Int,
                               options: StoreOptions = StoreOptions(durability: .none)) throws -> Store
{
    var feed = DemoFeed(seed: seed)
    return try populatedDemoStore(at: path, feed: &feed, messages: messages, contacts: contacts, options: options)
}

/// A demo-feed message for hand-written scenarios, dated `minute` minutes after the reference
/// date (titled `m<id>` unless given).
public func scenarioMessage(_ id: UInt64, folder: Int64 = 1, minute: Double, read: Bool = false, contact: UInt64 = 1,
                            title: String? = nil) -> Message
{
    Message(id: id, folder: folder, date: Date(timeIntervalSinceReferenceDate: minute * 60), title: title ?? "m\(id)", isRead: read,
            contactId: contact)
}

/// Message `id` with what follows from its id: a minute of `id` seconds, read when even, contact
/// `id % 3`, titled `"m<id>"` unless `title` says otherwise.
public func numberedMessage(_ id: UInt64, folder: Int64 = 1, title: String? = nil) -> Message {
    scenarioMessage(id, folder: folder, minute: Double(id) / 60, read: id % 2 == 0, contact: id % 3, title: title)
}

/// The value of JSON `text` (an object, an array or a single value).
public func parseJSON(_ text: some StringProtocol) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
}
