@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Thousands of random inserts, updates, upserts, deletes and range deletes across two entities,
/// checked after every commit against an in-memory model: records, every index's order, the
/// journal entries of the commit (kind, changed fields, index keys before and after) and the
/// store's invariant checker. Failing transactions (unique violations, duplicate inserts,
/// missing updates) must leave no trace.
@Suite(.blocking) struct StoreModelTests {
    /// The in-memory model: records by primary key, as hand-written field dictionaries.
    struct Model {
        var items: [Int64: Item] = [:]
        var notes: [String: Note] = [:]

        func records(_ entity: String) -> [FieldValue: [String: FieldValue]] {
            entity == "Item" ? Dictionary(uniqueKeysWithValues: items.values.map { (FieldValue.int($0.id), $0.fields) })
                : Dictionary(uniqueKeysWithValues: notes.values.map { (FieldValue.string($0.id), $0.fields) })
        }
    }

    struct ExpectedEntry: Equatable, CustomStringConvertible {
        var entity: String
        var id: FieldValue
        var kind: JournalEntry.Kind
        var changed: [String]
        var indexKeys: [String: [[FieldValue]?]]
        var description: String { "\(kind) \(entity) \(id) \(changed) \(indexKeys)" }
    }

    /// The declared indexes and the primary-key order every entity has.
    static func definitions(_ entity: String) -> [IndexDefinition] { (entity == "Item" ? Item.indexes : Note.indexes) + [.primaryKeyOrder] }

    /// The index key (components then primary key) of a record, or nil when not a member.
    static func key(_ index: IndexDefinition, _ fields: [String: FieldValue]) -> [FieldValue]? {
        if let condition = index.condition, !condition.holds({ fields[$0] ?? .null }) { return nil }
        return index.components.map { fields[$0.field] ?? .null } + [fields["id"]!]
    }

    static func order(_ index: IndexDefinition, _ a: [FieldValue], _ b: [FieldValue]) -> Bool {
        for (i, (x, y)) in zip(a, b).enumerated() {
            let c = FieldValue.compare(x, y) * (i < index.components.count && index.components[i].descending ? -1 : 1)
            if c != 0 { return c < 0 }
        }
        return false
    }

    static func entry(_ entity: String, old: [String: FieldValue]?, new: [String: FieldValue]?) -> ExpectedEntry? {
        let id = (old ?? new)!["id"]!
        var changed: [String] = []
        if let old, let new {
            changed = Set(old.keys).union(new.keys).filter { !(old[$0] ?? .null).isIdentical(to: new[$0] ?? .null) }.sorted()
            if changed.isEmpty { return nil }
        }
        var keys: [String: [[FieldValue]?]] = [:]
        for index in definitions(entity) {
            let before = old.flatMap { key(index, $0) }, after = new.flatMap { key(index, $0) }
            if before != nil || after != nil { keys[index.name] = [before, after] }
        }
        return ExpectedEntry(entity: entity, id: id, kind: old == nil ? .insert : (new == nil ? .delete : .update),
                             changed: changed, indexKeys: keys)
    }

    enum Outcome: Error { case uniqueViolation, exists, notFound }

    /// Applies one transaction's operations to a copy of the model and returns the expected
    /// journal entries, or the failure the store must report.
    struct Step {
        var ops: [(WriteTransaction) throws -> Void] = []
        var model: Model
        var entries: [ExpectedEntry] = []
        var failure: Outcome?

        mutating func putItem(_ item: Item, mode: WriteTransaction.WriteMode) {
            guard failure == nil else { return }
            let old = model.items[item.id]
            if mode == .insert && old != nil { failure = .exists; return }
            if mode == .update && old == nil { failure = .notFound; return }
            if model.items.values.contains(where: { $0.id != item.id && FieldValue.string($0.name) == .string(item.name) }) {
                failure = .uniqueViolation
                return
            }
            model.items[item.id] = item
            if let e = StoreModelTests.entry("Item", old: old?.fields, new: item.fields) { entries.append(e) }
        }

        mutating func putNote(_ note: Note) {
            guard failure == nil else { return }
            let old = model.notes[note.id]
            model.notes[note.id] = note
            if let e = StoreModelTests.entry("Note", old: old?.fields, new: note.fields) { entries.append(e) }
        }

        mutating func delete(_ entity: String, id: FieldValue) {
            guard failure == nil else { return }
            if entity == "Item", case let .int(i) = id, let old = model.items.removeValue(forKey: i) {
                entries.append(StoreModelTests.entry(entity, old: old.fields, new: nil)!)
            } else if entity == "Note", case let .string(s) = id {
                // String ids are keys up to canonical equivalence, as the store encodes them.
                if let key = model.notes.keys.first(where: { FieldValue.string($0) == .string(s) }), let old = model.notes.removeValue(forKey: key) {
                    entries.append(StoreModelTests.entry(entity, old: old.fields, new: nil)!)
                }
            }
        }
    }

    struct Generator {
        var random: RandomValues
        let names: [String]
        init(seed: UInt64) {
            random = RandomValues(seed: seed)
            names = (0..<300).map { "name\($0)" } + ["café", "cafe\u{301}", "Å", "A\u{30A}", "\u{212B}", "", "a\0", "a"]
        }
        mutating func item(id: Int64) -> Item {
            let scores: [Double] = [-0.0, 0.0, .nan, .infinity, -1.5, 2, 3.25, 1e300]
            return Item(id: id, group: Int.random(in: 0..<5, using: &random.rng) == 0 ? nil : Int64.random(in: 0..<5, using: &random.rng),
                        score: Bool.random(using: &random.rng) ? scores.randomElement(using: &random.rng)! : Double(Int.random(in: -50...50, using: &random.rng)),
                        name: names.randomElement(using: &random.rng)!, flag: Bool.random(using: &random.rng),
                        tag: Bool.random(using: &random.rng) ? nil : UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8.random(in: 0...3, using: &random.rng))))
        }
        mutating func noteID() -> String { ["n1", "n2", "é", "e\u{301}", "z", "n\0", "long" + String(repeating: "x", count: 40)].randomElement(using: &random.rng)! + String(Int.random(in: 0..<8, using: &random.rng)) }
        mutating func note(id: String) -> Note {
            Note(id: id, body: random.string(), priority: Int8.random(in: -3...3, using: &random.rng),
                 when: Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...20, using: &random.rng))),
                 labels: (0..<Int.random(in: 0...2, using: &random.rng)).map { _ in random.string() })
        }
    }

    @Test(arguments: testSeeds(TestSize.choose(quick: 1, long: 3)))
    func randomOperationsMatchTheModel(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self, Note.self], options: StoreOptions(durability: .none))
            var model = Model()
            var gen = Generator(seed: seed)
            var sequence: UInt64 = 0
            var operations = 0
            var failures: [String: Int] = [:]
            for commit in 0..<300 {
                var step = Step(model: model)
                for _ in 0..<Int.random(in: 1...8, using: &gen.random.rng) {
                    operations += 1
                    let id = Int64.random(in: 1...150, using: &gen.random.rng)
                    switch Int.random(in: 0..<20, using: &gen.random.rng) {
                    case 0..<7:
                        let item = gen.item(id: id)
                        step.putItem(item, mode: .upsert)
                        step.ops.append { try $0.put(item) }
                    case 7..<9:
                        var item = gen.item(id: id)
                        if let old = step.model.items[id], Bool.random(using: &gen.random.rng) { item.name = old.name }
                        step.putItem(item, mode: .update)
                        step.ops.append { try $0.update(item) }
                    case 9:
                        let item = gen.item(id: Bool.random(using: &gen.random.rng) ? id : id + 1000)
                        step.putItem(item, mode: .insert)
                        step.ops.append { try $0.insert(item) }
                    case 10:
                        // Rewriting identical content changes nothing.
                        if let same = step.model.items[id] {
                            step.putItem(same, mode: .upsert)
                            step.ops.append { try $0.put(same) }
                        }
                    case 11..<14:
                        step.delete("Item", id: .int(id))
                        step.ops.append { try $0.delete(Item.self, id: id) }
                    case 14:
                        let group = Int64.random(in: 0..<5, using: &gen.random.rng)
                        let doomed = step.model.items.values.filter { $0.group == group }.map(\.fields)
                            .sorted { Self.order(Item.indexes[0], Self.key(Item.indexes[0], $0)!, Self.key(Item.indexes[0], $1)!) }
                        for fields in doomed { step.delete("Item", id: fields["id"]!) }
                        step.ops.append { try $0.deleteRange(Item.self, index: "byGroupScore", range: .prefix(.int(group))) }
                    case 15..<18:
                        let note = gen.note(id: gen.noteID())
                        // Canonically equal ids are one record: the model keys it by the stored spelling.
                        if let existing = step.model.notes.keys.first(where: { FieldValue.string($0) == .string(note.id) }), existing != note.id {
                            step.model.notes[note.id] = step.model.notes.removeValue(forKey: existing)
                            step.model.notes[note.id]!.id = note.id
                        }
                        step.putNote(note)
                        step.ops.append { try $0.put(note) }
                    default:
                        let nid = gen.noteID()
                        step.delete("Note", id: .string(nid))
                        step.ops.append { try $0.delete(Note.self, id: nid) }
                    }
                }
                let ops = step.ops
                do {
                    try store.write { tx in for op in ops { try op(tx) } }
                    #expect(step.failure == nil, "seed \(seed) commit \(commit): expected \(String(describing: step.failure))")
                    if step.failure == nil { model = step.model }
                } catch let error as FeedstoreError {
                    switch (error, step.failure) {
                    case (.uniqueViolation, .uniqueViolation?), (.recordExists, .exists?), (.recordNotFound, .notFound?): break
                    default: Issue.record("seed \(seed) commit \(commit): \(error), expected \(String(describing: step.failure))")
                    }
                    step.entries = []
                    failures["\(step.failure.map { "\($0)" } ?? "none")", default: 0] += 1
                }
                try check(store, model: model, expected: step.failure == nil ? step.entries : [], sequence: &sequence,
                          context: "seed \(seed) commit \(commit)")
            }
            #expect(operations > 1_000)
            // Every kind of failing transaction happened, and was rolled back.
            #expect((failures["uniqueViolation"] ?? 0) > 3 && (failures["exists"] ?? 0) > 3 && (failures["notFound"] ?? 0) > 3,
                    "seed \(seed): \(failures)")
            #expect(sequence > 150)
            print("model test seed \(seed): \(operations) operations, \(sequence) commits, failed transactions \(failures)")
            store.close()
        }
    }

    func check(_ store: Store, model: Model, expected: [ExpectedEntry], sequence: inout UInt64, context: String) throws {
        try store.read { tx in
            for entity in ["Item", "Note"] {
                let records = model.records(entity)
                let stored = try tx.entries(entity: entity, index: nil)
                #expect(stored.count == records.count, "\(context): \(entity) count")
                for entry in stored {
                    let want = records[entry.id]
                    let same = want.map { w in Set(w.keys.filter { w[$0] != .null }) == Set(entry.record.keys)
                        && entry.record.allSatisfy { w[$0.key]?.isIdentical(to: $0.value) ?? false } } ?? false
                    #expect(same, "\(context): \(entity) \(entry.id) is \(entry.record), model has \(String(describing: want))")
                }
                for index in Self.definitions(entity) {
                    let want = records.values.compactMap { Self.key(index, $0) }.sorted { Self.order(index, $0, $1) }
                    let got = try tx.entries(entity: entity, index: index.name).map { $0.key + [$0.id] }
                    #expect(got == want, "\(context): index \(entity).\(index.name)")
                }
            }
            let commits = try tx.journal(after: sequence, limit: 10)
            if expected.isEmpty {
                #expect(commits.isEmpty, "\(context): unexpected commit")
            } else {
                #expect(commits.count == 1 && commits.first?.sequence == sequence + 1, "\(context): commit numbering")
                let got = try (commits.first?.entries ?? []).map { e in
                    ExpectedEntry(entity: e.entity, id: e.id, kind: e.kind, changed: e.changedFields,
                                  indexKeys: try Dictionary(uniqueKeysWithValues: e.indexChanges.map {
                                      ($0.index, [try $0.before?.components(), try $0.after?.components()])
                                  }))
                }
                #expect(got == expected, "\(context): journal")
                sequence += 1
            }
        }
        let issues = try store.verify()
        #expect(issues.isEmpty, "\(context): \(issues)")
    }
}
