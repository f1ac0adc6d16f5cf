import ArgumentParser
import Feedstore
import FeedstoreDemo

/// The size and seed of the generated demo feed.
public struct DemoFeedOptions: ParsableArguments, Sendable {
    public init() {}

    @Option(help: "Messages to write (default: 1,000,000). `demo run` writes them into a store that holds none, or fewer than asked for.")
    public var messages: Int?

    /// The messages to write.
    public var count: Int { messages ?? 1_000_000 }

    @Option(help: "Contacts to write.")
    public var contacts: Int = 1_000

    @Option(help: "Seed of the generated data.")
    public var seed: UInt64 = 1

    @Option(name: .customLong("records-per-transaction"), help: "Records written per transaction.")
    public var recordsPerTransaction: Int = 10_000

    @Option(name: .customLong("load-durability"), help: "Durability while writing the feed: none (one sync at the end), relaxed or full.")
    public var loadDurability: Durability = .none

    public func validate() throws {
        guard count >= 0, contacts >= 1 else { throw ValidationError("--messages must be 0 or more and --contacts 1 or more") }
        guard recordsPerTransaction >= 1 else { throw ValidationError("--records-per-transaction must be 1 or more") }
    }

    /// Writes the feed the bulk-load way (``DemoFeed/load(into:messages:contacts:durability:batch:progress:)``).
    public func populate(_ path: String) throws {
        var generator = DemoFeed(seed: seed)
        try generator.load(into: path, messages: count, contacts: contacts, durability: loadDurability, batch: recordsPerTransaction)
    }
}

extension Durability: ExpressibleByArgument {}
