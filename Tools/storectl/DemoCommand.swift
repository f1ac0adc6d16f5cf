import ArgumentParser
@_spi(Benchmarking) @_spi(Replication) import Feedstore
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

/// The size and seed of the generated demo feed.
struct DemoFeedOptions: ParsableArguments {
    @Option(help: "Messages to write (default: 1,000,000). `demo run` writes them into a store that holds none, or fewer than asked for.")
    var messages: Int?

    /// The messages to write.
    var count: Int { messages ?? 1_000_000 }

    @Option(help: "Contacts to write.")
    var contacts: Int = 1_000

    @Option(help: "Seed of the generated data.")
    var seed: UInt64 = 1

    @Option(name: .customLong("records-per-transaction"), help: "Records written per transaction.")
    var recordsPerTransaction: Int = 10_000

    @Option(name: .customLong("load-durability"), help: "Durability while writing the feed: none (one sync at the end), relaxed or full.")
    var loadDurability: Durability = .none

    func validate() throws {
        guard count >= 0, contacts >= 1 else { throw ValidationError("--messages must be 0 or more and --contacts 1 or more") }
        guard recordsPerTransaction >= 1 else { throw ValidationError("--records-per-transaction must be 1 or more") }
    }

    /// Writes the feed the bulk-load way (``DemoFeed/load(into:messages:contacts:durability:batch:progress:)``).
    func populate(_ path: String) throws {
        var generator = DemoFeed(seed: seed)
        try generator.load(into: path, messages: count, contacts: contacts, durability: loadDurability, batch: recordsPerTransaction)
    }
}

struct DemoRun: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Populate the demo feed if the store is empty, print an index range and counts, then watch it change.",
        discussion: """
        A sectioned, windowed watcher follows byFolderDate (one section per folder, 20 rows around \
        the first folder boundary) while a second writer commits random changes; each batch is \
        printed with its index paths and how long it took to compute.

        Example: storectl demo run ./demo-store --commits 10
        """
    )

    @Argument(help: "The store directory (created when missing).")
    var path: String = "demo-store"

    @OptionGroup(title: "Demo feed (written when the store is empty)")
    var feed: DemoFeedOptions

    @Option(help: "Commits the second writer makes while the watcher runs.")
    var commits: Int = 12

    /// The messages already written (0 for a new store).
    static func messageCount(_ path: String) throws -> Int {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .relaxed))
        defer { store.close() }
        return try store.read { try $0.count(Message.self) }
    }

    func run() throws {
        let stored = try Self.messageCount(path)
        if stored == 0 || stored < feed.messages ?? 0 {
            print("Populating \(path) with \(feed.count.formatted()) messages and \(feed.contacts.formatted()) contacts…")
            let start = Date()
            try feed.populate(path)
            let seconds = Date().timeIntervalSince(start)
            print(String(format: "  written in %.2f s (%@ messages/s)", seconds, Int(Double(feed.count) / seconds).formatted()))
        }
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .relaxed))
        defer { store.close() }
        try store.read { tx in
            print("\nStore \(path)")
            print("  contacts: \(try tx.count(Contact.self).formatted())")
            print("  messages: \(try tx.count(Message.self).formatted())")
            print("  unread:   \(try tx.count(Query(Message.unreadByDate)).formatted())")
            let bounds = try tx.journalBounds()
            print("  journal:  commits \(bounds.first)…\(bounds.last)")
            print("\nMessages per folder (index byFolderDate):")
            for folder in 0..<DemoFeed.folders {
                let n = try tx.count(Query(Message.byFolderDate, prefix: folder))
                print("  folder \(folder): \(n.formatted())")
            }
            print("\nNewest 10 messages in folder 1 (byFolderDate, prefix [1]):")
            let formatter = ISO8601DateFormatter()
            for m in try tx.objects(in: Query(Message.byFolderDate, prefix: 1), limit: 10) {
                let contact = try tx.get(Contact.self, id: m.contactId)?.name ?? "?"
                let title = m.title.padding(toLength: 18, withPad: " ", startingAt: 0)
                print("  \(formatter.string(from: m.date))  #\(String(m.id).padding(toLength: 8, withPad: " ", startingAt: 0)) \(m.isRead ? " " : "●") \(title) from \(contact)")
            }
        }
        try watchLive(store)
    }

    /// A message's title, from its stored fields.
    static func title(_ record: [String: FieldValue]?) -> String {
        if case let .string(title)? = record?["title"] { return title }
        return ""
    }

    /// A windowed, sectioned watcher across the first folder boundary, while another thread writes.
    func watchLive(_ store: Store) throws {
        let firstFolder = try store.read { try $0.count(Query(Message.byFolderDate, prefix: 0)) }
        let window = WatchWindow(offset: max(0, firstFolder - 10), limit: 20)
        let watcher = store.watch(entity: Message.entityName, index: Message.byFolderDate.name,
                                  options: WatchOptions(sectionBy: \Message.folder, window: window))
        var start = DispatchTime.now().uptimeNanoseconds
        guard let initial = try watcher.poll() else { return }
        var micros = Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000
        print("\nWatching byFolderDate rows \(window.offset)..<\(window.offset + window.limit), a section per folder")
        print(String(format: "initial batch at sequence %llu (%.0f µs): %d sections, %d rows", initial.toSequence, micros,
                     initial.sectionInserts.count, initial.inserts.count))
        for section in initial.sectionInserts {
            let rows = initial.inserts.filter { $0.path.section == section.index }
            print("  section \(section.index) [folder \(BatchPrinter.describe(section.key))]: rows \(rows.map { "#\($0.id.jsonText)" }.joined(separator: " "))")
        }

        // The second writer: random changes, plus changes aimed at the rows on screen.
        let shown = initial.inserts.compactMap { row -> UInt64? in if case let .uint(id) = row.id { id } else { nil } }
        let commits = commits, seed = feed.seed
        let writer = Thread {
            var generator = DemoFeed(seed: seed &+ 99)
            for i in 0..<commits {
                usleep(150_000)
                _ = try? store.write { tx -> Void in
                    try generator.mutate(tx, count: 3, contacts: 1_000)
                    guard !shown.isEmpty, var target = try tx.get(Message.self, id: shown[(i * 7) % shown.count]) else { return }
                    switch i % 4 {
                    case 0: target.isRead.toggle()
                    case 1: target.date = target.date.addingTimeInterval(86_400 * 30)
                    case 2: target.folder = (target.folder + 1) % DemoFeed.folders
                    default: target.title = "edited " + target.title
                    }
                    try tx.put(target)
                }
            }
        }
        writer.start()
        let deadline = Date().addingTimeInterval(Double(commits) * 0.15 + 2)
        while Date() < deadline {
            // Poll every 2 ms so the printed time is the batch's computation alone.
            start = DispatchTime.now().uptimeNanoseconds
            guard let batch = try watcher.poll() else {
                usleep(2_000)
                continue
            }
            micros = Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000
            print(String(format: "batch %llu→%llu (%.0f µs)", batch.fromSequence, batch.toSequence, micros))
            for line in BatchPrinter.lines(batch, label: Self.title) { print(line) }
        }
        watcher.cancel()
    }
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
        try feed.populate(path)
        print("populated \(feed.count) messages, \(feed.contacts) contacts")
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

extension Durability: ExpressibleByArgument {}
