import ArgumentParser
@_spi(Benchmarking) @_spi(Replication) import Feedstore
import DemoConsole
import FeedstoreDemo
import Foundation

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Populate, mutate and show the demo feed (contacts and messages).",
        subcommands: [DemoRun.self, DemoPopulate.self, DemoMutate.self, DemoMigrate.self, DemoScroll.self],
        defaultSubcommand: DemoRun.self
    )
}

struct DemoRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: DemoRunOptions.abstract,
        discussion: DemoRunOptions.discussion + "\n\nExample: storectl demo run ./demo-store --commits 10"
    )

    @OptionGroup var options: DemoRunOptions

    func run() throws { try options.run() }
}

struct DemoPopulate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "populate",
        abstract: "Write the demo feed into a store (ids from 1; existing records with those ids are replaced).",
        discussion: "Example: storectl demo populate ./demo-store --messages 20000 --seed 7"
    )

    @Argument(help: "The store directory (created when missing).")
    var path: String

    @OptionGroup var feed: DemoFeedOptions

    func run() throws {
        let start = Date()
        try feed.populate(path)
        print(String(format: "populated %d messages, %d contacts in %.2f s", feed.count, feed.contacts, Date().timeIntervalSince(start)))
    }
}

struct DemoMutate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mutate",
        abstract: "Commit seeded random changes to the demo feed, printing `committed <sequence>` after each commit.",
        discussion: """
        Changes: inserts, deletes, folder moves, date changes, read/unread flips, contact renames \
        and swaps of two messages' dates, K per commit.

        Example: storectl demo mutate ./demo-store --commits 100 --per-commit 5
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

    @Option(help: "Milliseconds to wait after each commit (a steady writer instead of a burst).")
    var pause: Int = 0

    @Option(help: "Keep at most this many commits in the journal (trimming older ones as it writes).")
    var keepCommits: UInt64?

    @Option(help: "The map size to open the store with, in bytes (it grows by itself when full; a small one makes the writer grow it).")
    var initialMapSize: Int?

    @Option(help: "A durable journal cursor to move past each commit once it returns, printing `cursor <sequence>` (a consumer that keeps up).")
    var acknowledgeCursor: String?

    @Flag(help: .hidden)
    var syncsAfterPublishing = false

    @Flag(help: "With --durability full: make each commit durable with one sync of a commit log instead of LMDB's two syncs.")
    var commitLog = false

    /// The power-loss checks' commit-log workload: checkpoints among a few commits.
    @Option(help: .hidden)
    var commitLogCheckpointPages: Int?

    /// The fault tests' writer that meets a failing disk: a commit that fails is reported
    /// (`failed <error>`, in order with the commits), then what a read sees (`reads through
    /// <sequence>`, or `reads refused: <error>`), and the next one made.
    @Flag(help: .hidden)
    var goesOnAfterFailures = false

    @Flag(help: "Print nothing per commit.")
    var quiet = false

    func validate() throws {
        guard !syncsAfterPublishing || durability == "relaxed" else { throw ValidationError("--syncs-after-publishing needs --durability relaxed") }
        guard !commitLog || durability == "full" else { throw ValidationError("--commit-log needs --durability full") }
        guard pause >= 0 else { throw ValidationError("--pause must be 0 or more") }
        guard initialMapSize.map({ $0 > 0 }) ?? true else { throw ValidationError("--initial-map-size must be more than 0") }
        guard keepCommits.map({ $0 >= 1 }) ?? true else { throw ValidationError("--keep-commits must be 1 or more") }
    }

    func run() throws {
        guard let durability = Durability(rawValue: durability) else {
            throw ValidationError("--durability must be full, relaxed or none")
        }
        var options = StoreOptions(durability: durability)
        // A replica's relaxed commits (the power-loss checks' workload for them).
        options.syncsAfterPublishing = syncsAfterPublishing
        options.keepsCommitLog = commitLog
        if let commitLogCheckpointPages { options.commitLogCheckpointPages = commitLogCheckpointPages }
        if let keepCommits { options.journalRetention = JournalRetention(minimumCommits: 1, maximumCommits: keepCommits) }
        if let initialMapSize { options.initialMapSize = initialMapSize }
        let store = try Store(path: path, entities: DemoFeed.entities, options: options)
        defer { store.close() }
        let contacts = UInt64(max(1, try store.read { try $0.count(Contact.self) }))
        let cursor = try acknowledgeCursor.map { try store.journalCursor(named: $0) }
        var feed = DemoFeed(seed: seed)
        for _ in 0..<commits {
            let perCommit = perCommit
            let sequence: UInt64?
            do {
                sequence = try store.write { tx in
                    try feed.mutate(tx, count: perCommit, contacts: contacts)
                    return tx.commitSequence
                }
            } catch where goesOnAfterFailures {
                Output.lineNow("failed \(error)")
                let reads: String
                do { reads = "reads through \(try store.read { try $0.journalBounds().last })" } catch { reads = "reads refused: \(error)" }
                Output.lineNow(reads)
                continue
            }
            if !quiet, let sequence {
                Output.lineNow("committed \(sequence)")
            }
            if let cursor, let sequence {
                try cursor.acknowledge(through: sequence)
                if !quiet { Output.lineNow("cursor \(sequence)") }
            }
            if pause > 0 { usleep(UInt32(pause) * 1_000) }
        }
    }
}

struct DemoMigrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Migrate the demo feed's messages to their next version (title renamed subject, a new word count, a new index).",
        discussion: """
        Prints `migrated <processed> of <total>` after each transaction. Stopped at any point, \
        the next run resumes after the last transaction that committed; a finished migration \
        prints `already finished`. After it, the store holds MessageV2 records, which `demo run` \
        no longer reads.

        Example: storectl demo migrate ./demo-store --records-per-transaction 10000
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @Option(help: "Records rewritten per transaction.")
    var recordsPerTransaction: Int = 10_000

    @Option(help: "full, relaxed or none.")
    var durability: String = "full"

    func run() throws {
        guard let durability = Durability(rawValue: durability) else {
            throw ValidationError("--durability must be full, relaxed or none")
        }
        let store = try Store(path: path, entities: [Contact.self, MessageV2.self], options: StoreOptions(durability: durability))
        defer { store.close() }
        let name = "title-to-subject"
        if try store.migrationProgress(of: MessageV2.self, name: name)?.finished == true {
            print("already finished")
            return
        }
        let start = Date()
        let done = try store.migrate(MessageV2.self, name: name, recordsPerTransaction: recordsPerTransaction,
                                     progress: { step in
                                         Output.lineNow("migrated \(step.processed) of \(step.total)")
                                     }, MessageV2.migrated)
        print(String(format: "finished: %d rewritten, %d deleted in %.2f s", done.rewritten, done.deleted, Date().timeIntervalSince(start)))
    }
}

