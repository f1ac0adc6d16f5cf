import Feedstore
import Foundation

/// Populates and mutates the demo feed, deterministically from a seed.
public struct DemoFeed {
    public static let entities: [any Entity.Type] = [Contact.self, Message.self]
    public static let folders: Int64 = 8
    // Dates from October 2024 over about 19 months: all in the past, as a mailbox's are.
    static let epoch = Date(timeIntervalSinceReferenceDate: 750_000_000)
    static let words = ["lunch", "report", "invoice", "meeting", "trip", "photos", "launch", "review", "draft",
                        "budget", "party", "release", "question", "reminder", "update", "plan"]

    public var generator: SeededGenerator

    public init(seed: UInt64) { generator = SeededGenerator(seed: seed) }

    public mutating func contact(id: UInt64) -> Contact {
        Contact(id: id, name: "\(Self.words.randomElement(using: &generator)!.capitalized) \(id)")
    }

    public mutating func message(id: UInt64, contacts: UInt64) -> Message {
        Message(id: id, folder: Int64.random(in: 0..<Self.folders, using: &generator),
                date: Self.epoch.addingTimeInterval(Double(Int.random(in: 0..<50_000_000, using: &generator))),
                title: "\(Self.words.randomElement(using: &generator)!) \(Self.words.randomElement(using: &generator)!)",
                isRead: Bool.random(using: &generator), contactId: UInt64.random(in: 1...max(1, contacts), using: &generator))
    }

    /// Writes `contacts` contacts and `messages` messages (ids from 1) in transactions of
    /// `batch` records; `progress` is called after each transaction with the messages written.
    public mutating func populate(_ store: Store, messages: Int, contacts: Int, batch: Int = 1_000,
                                  progress: ((Int) -> Void)? = nil) throws
    {
        var next = 1
        while next <= contacts {
            let end = min(contacts, next + batch - 1)
            let rows = (next...end).map { contact(id: UInt64($0)) }
            try store.write { tx in for row in rows { try tx.put(row) } }
            next = end + 1
        }
        next = 1
        while next <= messages {
            let end = min(messages, next + batch - 1)
            let rows = (next...end).map { message(id: UInt64($0), contacts: UInt64(contacts)) }
            try store.write { tx in for row in rows { try tx.put(row) } }
            progress?(end)
            next = end + 1
        }
    }

    /// Loads the feed into the store at `path` the bulk-load way: opened with `durability`
    /// (none, for one sync at the end), `batch` records per transaction, synced before it is
    /// closed. Writes replace records by id, so loading again completes a load cut short.
    public mutating func load(into path: String, messages: Int, contacts: Int, durability: Durability = .none,
                              batch: Int = 10_000, progress: ((Int) -> Void)? = nil) throws
    {
        let store = try Store(path: path, entities: Self.entities, options: StoreOptions(durability: durability))
        defer { store.close() }
        try populate(store, messages: messages, contacts: contacts, batch: batch, progress: progress)
        try store.sync()
    }

    /// One kind of random change the mutator makes.
    public enum Change: String, CaseIterable, Sendable {
        case insert, delete, moveFolder, changeDate, flipRead, renameContact, swapDates
    }

    /// Applies `count` random changes in one transaction; returns what it did.
    @discardableResult
    public mutating func mutate(_ tx: WriteTransaction, count: Int, contacts: UInt64) throws -> [Change] {
        var done: [Change] = []
        let total = UInt64(try tx.count(Message.self))
        for _ in 0..<count {
            let change = Change.allCases.randomElement(using: &generator)!
            let id = UInt64.random(in: 1...max(1, total + 16), using: &generator)
            switch change {
            case .insert:
                let newID = UInt64.random(in: 1...UInt64(Int32.max), using: &generator) + 1_000_000_000
                try tx.put(message(id: newID, contacts: contacts))
            case .delete:
                try tx.delete(Message.self, id: id)
            case .moveFolder, .changeDate, .flipRead:
                guard var m = try tx.get(Message.self, id: id) else { continue }
                switch change {
                case .moveFolder: m.folder = Int64.random(in: 0..<Self.folders, using: &generator)
                case .changeDate: m.date = m.date.addingTimeInterval(Double(Int.random(in: -86_400...86_400, using: &generator)))
                default: m.isRead.toggle()
                }
                try tx.put(m)
            case .renameContact:
                let cid = UInt64.random(in: 1...max(1, contacts), using: &generator)
                guard var c = try tx.get(Contact.self, id: cid) else { continue }
                c.name = "\(Self.words.randomElement(using: &generator)!.capitalized) \(cid)"
                try tx.put(c)
            case .swapDates:
                let other = UInt64.random(in: 1...max(1, total + 16), using: &generator)
                guard var a = try tx.get(Message.self, id: id), var b = try tx.get(Message.self, id: other), a.id != b.id else {
                    continue
                }
                swap(&a.date, &b.date)
                try tx.put(a)
                try tx.put(b)
            }
            done.append(change)
        }
        return done
    }
}
