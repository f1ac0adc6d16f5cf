import ArgumentParser
import Feedstore
import FeedstoreDemo
import Foundation

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Populate, mutate and show the demo feed (contacts and messages).",
        subcommands: [DemoRun.self, DemoPopulate.self, DemoMutate.self],
        defaultSubcommand: DemoRun.self
    )
}

/// The size and seed of the generated demo feed.
struct DemoFeedOptions: ParsableArguments {
    @Option(help: "Messages to write.")
    var messages: Int = 100_000

    @Option(help: "Contacts to write.")
    var contacts: Int = 1_000

    @Option(help: "Seed of the generated data.")
    var seed: UInt64 = 1
}

struct DemoRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Populate the demo feed if the store is empty, then print an index range and counts.",
        discussion: "Example: storectl demo run ./demo-store --messages 100000"
    )

    @Argument(help: "The store directory (created when missing).")
    var path: String = "demo-store"

    @OptionGroup(title: "Demo feed (written when the store is empty)")
    var feed: DemoFeedOptions

    func run() throws {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .relaxed))
        defer { store.close() }
        if try store.read({ try $0.count(Message.self) }) == 0 {
            print("Populating \(path) with \(feed.messages.formatted()) messages and \(feed.contacts.formatted()) contacts…")
            let start = Date()
            var generator = DemoFeed(seed: feed.seed)
            try generator.populate(store, messages: feed.messages, contacts: feed.contacts)
            let seconds = Date().timeIntervalSince(start)
            print(String(format: "  written in %.2f s (%@ messages/s)", seconds, Int(Double(feed.messages) / seconds).formatted()))
        }
        try store.read { tx in
            print("\nStore \(path)")
            print("  contacts: \(try tx.count(Contact.self).formatted())")
            print("  messages: \(try tx.count(Message.self).formatted())")
            print("  unread:   \(try tx.count(Message.self, index: "unreadByDate").formatted())")
            let bounds = try tx.journalBounds()
            print("  journal:  commits \(bounds.first)…\(bounds.last)")
            print("\nMessages per folder (index byFolderDate):")
            for folder in 0..<DemoFeed.folders {
                let n = try tx.count(Message.self, index: "byFolderDate", range: .prefix(.int(folder)))
                print("  folder \(folder): \(n.formatted())")
            }
            print("\nNewest 10 messages in folder 1 (byFolderDate, prefix [1]):")
            let formatter = ISO8601DateFormatter()
            for m in try tx.query(Message.self, index: "byFolderDate", range: .prefix(1), limit: 10) {
                let contact = try tx.get(Contact.self, id: m.contactId)?.name ?? "?"
                let title = m.title.padding(toLength: 18, withPad: " ", startingAt: 0)
                print("  \(formatter.string(from: m.date))  #\(String(m.id).padding(toLength: 8, withPad: " ", startingAt: 0)) \(m.isRead ? " " : "●") \(title) from \(contact)")
            }
        }
    }
}

struct DemoPopulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "populate",
        abstract: "Write the demo feed into a store (ids from 1; existing records with those ids are replaced).",
        discussion: "Example: storectl demo populate ./demo-store --messages 1000000 --seed 7"
    )

    @Argument(help: "The store directory (created when missing).")
    var path: String

    @OptionGroup var feed: DemoFeedOptions

    func run() throws {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        defer { store.close() }
        var generator = DemoFeed(seed: feed.seed)
        try generator.populate(store, messages: feed.messages, contacts: feed.contacts)
        print("populated \(feed.messages) messages, \(feed.contacts) contacts")
    }
}

struct DemoMutate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mutate",
        abstract: "Commit seeded random changes to the demo feed, printing `committed <sequence>` after each commit.",
        discussion: """
        Changes: inserts, deletes, folder moves, date changes, read/unread flips, contact renames
        and swaps of two messages' dates, K per commit.
        Example: storectl demo mutate ./demo-store --commits 100 --per-commit 5 --seed 3
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @Option(help: "Commits to make.")
    var commits: Int = 100

    @Option(help: "Changes per commit.")
    var perCommit: Int = 1

    @Option(help: "Seed of the changes.")
    var seed: UInt64 = 1

    @Option(help: "full, relaxed or none.")
    var durability: String = "full"

    @Flag(help: "Print nothing per commit.")
    var quiet = false

    func run() throws {
        guard let durability = Durability(rawValue: durability) else {
            throw ValidationError("--durability must be full, relaxed or none")
        }
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: durability))
        defer { store.close() }
        let contacts = UInt64(max(1, try store.read { try $0.count(Contact.self) }))
        var feed = DemoFeed(seed: seed)
        for _ in 0..<commits {
            let perCommit = perCommit
            let sequence: UInt64? = try store.write { tx in
                try feed.mutate(tx, count: perCommit, contacts: contacts)
                return tx.commitSequence
            }
            if !quiet, let sequence {
                FileHandle.standardOutput.write(Data("committed \(sequence)\n".utf8))
            }
        }
    }
}
