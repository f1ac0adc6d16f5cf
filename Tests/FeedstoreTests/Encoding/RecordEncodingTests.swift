@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Writes encode records straight into their catalog fields' slots. These tests hold that path
/// to the general encoder, which builds a tree of named values: whatever a record's `encode(to:)`
/// does, the stored record, its index entries and the journal's changed fields must be what the
/// tree says.
@Suite(.blocking) struct RecordEncodingTests {
    /// A record whose encoding is a script: members written twice, as scalars, nested objects,
    /// arrays or nil, fields the catalog has not seen yet, and fields whose kind changes.
    struct Scripted: Entity {
        enum Step: Sendable {
            case scalar(String, FieldValue)
            case null(String)
            case object(String, [String: FieldValue])
            case array(String, [FieldValue])
        }

        var id: Int64
        var steps: [Step] = []

        static let entityName = "Scripted"
        static let indexes: [IndexDefinition] = [
            IndexDefinition("byA", [.ascending("a")]),
            IndexDefinition("byAC", [.ascending("a"), .descending("c.x")], where: .field("d") == true),
        ]
        /// Its decoder reads only the id, so the fields the indexes name are declared.
        static let fieldNames: [String]? = ["id", "a", "c.*", "d"]

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(_ name: String) { stringValue = name }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(id: Int64, steps: [Step]) {
            self.id = id
            self.steps = steps
        }

        init(from decoder: any Decoder) throws {
            id = try decoder.container(keyedBy: Key.self).decode(Int64.self, forKey: Key("id"))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(id, forKey: Key("id"))
            for step in steps {
                switch step {
                case let .scalar(name, value): try Self.encode(value, forKey: Key(name), in: &container)
                case let .null(name): try container.encodeNil(forKey: Key(name))
                case let .object(name, members):
                    var nested = container.nestedContainer(keyedBy: Key.self, forKey: Key(name))
                    for (member, value) in members { try Self.encode(value, forKey: Key(member), in: &nested) }
                case let .array(name, items):
                    var nested = container.nestedUnkeyedContainer(forKey: Key(name))
                    for item in items { try Self.append(item, to: &nested) }
                }
            }
        }

        /// Encodes a value as the Swift type it stands for.
        static func encode(_ value: FieldValue, forKey key: Key, in container: inout KeyedEncodingContainer<Key>) throws {
            switch value {
            case .null: try container.encodeNil(forKey: key)
            case let .bool(v): try container.encode(v, forKey: key)
            case let .int(v): try container.encode(v, forKey: key)
            case let .uint(v): try container.encode(v, forKey: key)
            case let .double(v): try container.encode(v, forKey: key)
            case let .date(v): try container.encode(v, forKey: key)
            case let .string(v): try container.encode(v, forKey: key)
            case let .bytes(v): try container.encode(Data(v), forKey: key)
            case let .uuid(v): try container.encode(v, forKey: key)
            case let .array(items):
                var nested = container.nestedUnkeyedContainer(forKey: key)
                for item in items { try append(item, to: &nested) }
            case let .object(members):
                var nested = container.nestedContainer(keyedBy: Key.self, forKey: key)
                for (member, value) in members { try encode(value, forKey: Key(member), in: &nested) }
            }
        }

        static func append(_ value: FieldValue, to container: inout any UnkeyedEncodingContainer) throws {
            switch value {
            case .null: try container.encodeNil()
            case let .bool(v): try container.encode(v)
            case let .int(v): try container.encode(v)
            case let .uint(v): try container.encode(v)
            case let .double(v): try container.encode(v)
            case let .date(v): try container.encode(v)
            case let .string(v): try container.encode(v)
            case let .bytes(v): try container.encode(Data(v))
            case let .uuid(v): try container.encode(v)
            case let .array(items):
                var nested = container.nestedUnkeyedContainer()
                for item in items { try append(item, to: &nested) }
            case let .object(members):
                var nested = container.nestedContainer(keyedBy: Key.self)
                for (member, value) in members { try encode(value, forKey: Key(member), in: &nested) }
            }
        }
    }

    /// A random script. Index components ("a", "c.x") only ever hold scalars; "c" is an object
    /// or a scalar; the other names hold anything. New names appear as the run goes on, so the
    /// entity outgrows the field count up to which names are found by scanning.
    static func script(_ random: inout RandomValues, fieldsSeen: Int) -> [Scripted.Step] {
        let names = ["a", "b", "c", "d", "a field name longer than fifteen bytes", "é"]
            + (0..<fieldsSeen).map { "f\($0)" }
        return (0..<Int.random(in: 0...8, using: &random.rng)).map { _ in
            let name = names.randomElement(using: &random.rng)!
            switch (name, Int.random(in: 0..<5, using: &random.rng)) {
            case (_, 0): return .null(name)
            case ("a", _): return .scalar(name, random.scalar())
            case ("d", _): return .scalar(name, Bool.random(using: &random.rng) ? .bool(true) : random.scalar())
            case ("c", 1...2): return .object(name, ["x": random.scalar(), "y": random.value()])
            case (_, 1): return .object(name, [random.string(): random.value(), "x": random.value()])
            case (_, 2): return .array(name, (0..<Int.random(in: 0...3, using: &random.rng)).map { _ in random.value() })
            case ("c", _): return .scalar(name, random.scalar())
            default: return .scalar(name, random.value())
            }
        }
    }

    /// A value equal to `value` in the key order but stored differently, if there is one.
    static func twin(of value: FieldValue) -> FieldValue? {
        func flipped(_ d: Double) -> Double? { d == 0 || d.isNaN ? Double(bitPattern: d.bitPattern ^ (1 << 63)) : nil }
        switch value {
        case let .double(d): return flipped(d).map { .double($0) }
        case let .date(d): return flipped(d.timeIntervalSinceReferenceDate).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case let .string(s):
            let other = s.decomposedStringWithCanonicalMapping.utf8.elementsEqual(s.utf8) ? s.precomposedStringWithCanonicalMapping
                : s.decomposedStringWithCanonicalMapping
            return other.utf8.elementsEqual(s.utf8) ? nil : .string(other)
        default: return nil
        }
    }

    /// The record as the tree encoder sees it, without the fields that are nil.
    static func reference(_ record: Scripted) throws -> [String: FieldValue] {
        guard case let .object(fields) = try FieldValueEncoder.encode(record) else { throw FeedstoreError.unknownEntity("not an object", entities: []) }
        return fields.filter { if case .null = $0.value { false } else { true } }
    }

    static func same(_ a: [String: FieldValue]?, _ b: [String: FieldValue]?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case let (a?, b?): FieldValue.object(a).isIdentical(to: .object(b))
        default: false
        }
    }

    @Test(arguments: testSeeds(3))
    func slotEncodingStoresWhatTheTreeEncoderSees(seed: UInt64) throws {
        var random = RandomValues(seed: seed)
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Scripted.self], options: StoreOptions(durability: .none))
            var model: [Int64: [String: FieldValue]] = [:]
            var scripts: [Int64: [Scripted.Step]] = [:]
            var sequence = try store.read { try $0.journalBounds().last }
            for step in 0..<400 {
                let context = "seed \(seed), step \(step)"
                let id = Int64.random(in: 1...24, using: &random.rng)
                let before = model[id]
                if Int.random(in: 0..<8, using: &random.rng) == 0 {
                    try store.write { tx in _ = try tx.delete(Scripted.self, id: id) }
                    model[id] = nil
                    scripts[id] = nil
                } else {
                    // Often a record is written again with one more step, so updates change one field
                    // and equal-but-not-identical values (-0.0 and 0.0, NaNs, equivalent strings) occur.
                    var steps = Self.script(&random, fieldsSeen: step / 16)
                    if let previous = scripts[id], Bool.random(using: &random.rng) {
                        let twins = (before ?? [:]).compactMap { name, value in Self.twin(of: value).map { Scripted.Step.scalar(name, $0) } }
                        steps = previous + (Bool.random(using: &random.rng) ? twins.prefix(1) : steps.prefix(1))
                    }
                    scripts[id] = steps
                    let record = Scripted(id: id, steps: steps)
                    try store.write { tx in try tx.put(record) }
                    model[id] = try Self.reference(record)
                }
                let stored = try store.read { try $0.record(entity: Scripted.entityName, id: .int(id)) }
                #expect(Self.same(stored, model[id]), "\(context): stored \(stored.map { "\($0)" } ?? "nil"), expected \(model[id].map { "\($0)" } ?? "nil")")

                let commits = try store.read { try $0.journal(after: sequence) }
                if Self.same(before, model[id]) {
                    #expect(commits.isEmpty, "\(context): a write that changed nothing made a commit")
                    continue
                }
                sequence += 1
                let entry = commits.first?.entries.first
                #expect(commits.count == 1 && commits.first?.entries.count == 1, "\(context): one commit of one entry")
                if let before, let after = model[id] {
                    let changed = Set(before.keys).union(after.keys)
                        .filter { !(before[$0] ?? .null).isIdentical(to: after[$0] ?? .null) }.sorted()
                    #expect(entry?.kind == .update && entry?.changedFields == changed, "\(context): \(entry.map { "\($0)" } ?? "nil")")
                } else {
                    #expect(entry?.kind == (before == nil ? .insert : .delete), "\(context)")
                }
            }
            let counts = try store.read { tx in
                try (tx.count(Scripted.self), tx.count(Scripted.self, index: "byA"), tx.count(Scripted.self, index: "byAC"),
                     tx.catalog.entities[Scripted.entityName]?.fields.count ?? 0)
            }
            let inPartial = model.values.filter { ($0["d"] ?? .null) == .bool(true) }.count
            #expect(counts.0 == model.count && counts.1 == model.count && counts.2 == inPartial, "seed \(seed): \(counts)")
            #expect(counts.3 > FieldNameTable.scannedFields, "seed \(seed): the entity should outgrow scanned field lookups")
            let issues = try store.verify()
            #expect(issues.isEmpty, "seed \(seed): \(issues)")
        }
    }

    @Test func recordsThatAreNotKeyedContainersAreRefused() throws {
        struct Bare: Entity {
            var id: Int64
            static let entityName = "Bare"
            init(id: Int64) { self.id = id }
            init(from decoder: any Decoder) throws { id = try decoder.singleValueContainer().decode(Int64.self) }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(id)
            }
        }
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Bare.self], options: StoreOptions(durability: .none))
            #expect {
                try store.write { tx in try tx.put(Bare(id: 1)) }
            } throws: { error in
                guard case let FeedstoreError.encodingFailed(entity, reason) = error else { return false }
                return entity == "Bare" && reason.contains("keyed container")
            }
            #expect(try store.read { try $0.count(Bare.self) } == 0)
        }
    }
}
