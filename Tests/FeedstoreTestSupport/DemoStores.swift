import Feedstore
import FeedstoreDemo

/// A store of the demo feed at `path`, populated by `feed` with `messages` messages and
/// `contacts` contacts (the feed's next changes continue from there).
public func populatedDemoStore(at path: String, feed: inout DemoFeed, messages: Int, contacts: Int,
                               options: StoreOptions = StoreOptions(durability: .none)) throws -> Store
{
    let store = try Store(path: path, entities: DemoFeed.entities, options: options)
    try feed.populate(store, messages: messages, contacts: contacts)
    return store
}

/// The same, populated by a feed of `seed`.
public func populatedDemoStore(at path: String, seed: UInt64, messages: Int, contacts: Int,
                               options: StoreOptions = StoreOptions(durability: .none)) throws -> Store
{
    var feed = DemoFeed(seed: seed)
    return try populatedDemoStore(at: path, feed: &feed, messages: messages, contacts: contacts, options: options)
}
