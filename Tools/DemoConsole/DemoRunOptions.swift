import ArgumentParser
import Dispatch
import Feedstore
import FeedstoreDemo
import Foundation

/// What the demo shows: the store (populated first when it holds fewer messages than asked
/// for), its counts and a page of an index, then a sectioned, windowed watcher while a second
/// writer commits; `storectl demo run` and `feedstore-demo` both run it.
public struct DemoRunOptions: ParsableArguments, Sendable {
    public init() {}

    public static let abstract = "Populate the demo feed if the store is empty, print an index range and counts, then watch it change."
    public static let discussion = """
        A sectioned, windowed watcher follows byFolderDate (one section per folder, 20 rows around \
        the first folder boundary) while a second writer commits random changes; each batch is \
        printed with its index paths and how long it took to compute.
        """

    @Argument(help: "The store directory (created when missing).")
    public var path: String = "demo-store"

    @OptionGroup(title: "Demo feed (written when the store is empty)")
    public var feed: DemoFeedOptions

    @Option(help: "Commits the second writer makes while the watcher runs.")
    public var commits: Int = 12

    /// The messages already written (0 for a new store).
    public static func messageCount(_ path: String) throws -> Int {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .relaxed))
        defer { store.close() }
        return try store.read { try $0.count(Message.self) }
    }

    public func run() throws {
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

