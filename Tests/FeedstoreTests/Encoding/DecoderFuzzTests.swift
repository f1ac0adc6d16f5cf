@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Seeded fuzzing of the decoders that read stored bytes: index keys, journal entries, commit
/// headers, count-tree nodes and the catalog. Inputs are random bytes and mutations of valid
/// encodings (truncations, bit flips, inserted and spliced bytes). Each decoder must return a
/// value or throw ``FeedstoreError`` — never trap or read out of bounds. The record decoder has
/// the same test in `RecordCodecTests`. `FEEDSTORE_FUZZ_ITERATIONS=n` sets the inputs per seed
/// and decoder for long runs.
@Suite(.blocking) struct DecoderFuzzTests {
    static let iterations = ProcessInfo.processInfo.environment["FEEDSTORE_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 4_000

    /// Random bytes, or a mutation of `valid`.
    static func input(from valid: [UInt8], _ random: inout RandomValues) -> [UInt8] {
        var bytes = valid
        switch Int.random(in: 0..<6, using: &random.rng) {
        case 0:
            return (0..<Int.random(in: 0...64, using: &random.rng)).map { _ in UInt8.random(in: 0...255, using: &random.rng) }
        case 1 where !bytes.isEmpty:
            bytes.removeLast(Int.random(in: 1...bytes.count, using: &random.rng))
        case 2 where !bytes.isEmpty:
            for _ in 0..<Int.random(in: 1...3, using: &random.rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &random.rng)] ^= UInt8(1 << Int.random(in: 0..<8, using: &random.rng))
            }
        case 3:
            let extra: [UInt8] = [0x00, 0xFF, 0x7F, 0x80, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]
            bytes.insert(contentsOf: extra.prefix(Int.random(in: 1...extra.count, using: &random.rng)),
                         at: Int.random(in: 0...bytes.count, using: &random.rng))
        case 4 where bytes.count > 1:
            // A slice of the input repeated: lengths and counts that point past the end.
            let start = Int.random(in: 0..<bytes.count, using: &random.rng)
            bytes += bytes[start...]
        default:
            // Two bytes swapped.
            if bytes.count > 1 {
                bytes.swapAt(Int.random(in: 0..<bytes.count, using: &random.rng), Int.random(in: 0..<bytes.count, using: &random.rng))
            }
        }
        return bytes
    }

    /// Runs `decode` on fuzzed inputs derived from `valid()`; a thrown error must be typed.
    static func fuzz(seed: UInt64, valid: (inout RandomValues) throws -> [UInt8], decode: ([UInt8]) throws -> Void) throws {
        var random = RandomValues(seed: seed)
        var decoded = 0, rejected = 0
        for _ in 0..<iterations {
            let bytes = input(from: try valid(&random), &random)
            do {
                try decode(bytes)
                decoded += 1
            } catch is FeedstoreError {
                rejected += 1
            } catch {
                Issue.record("seed \(seed): untyped error \(error) for \(bytes)")
            }
        }
        // Both outcomes occur, so the inputs are neither all garbage nor all valid.
        #expect(decoded > 0 && rejected > 0, "seed \(seed): \(decoded) decoded, \(rejected) rejected")
    }

    @Test(arguments: testSeeds(3)) func indexKeys(seed: UInt64) throws {
        try Self.fuzz(seed: seed, valid: { random in
            let values = (0..<Int.random(in: 1...3, using: &random.rng)).map { _ in random.scalar() }
            return try KeyEncoding.encode(values, descending: values.map { _ in Bool.random(using: &random.rng) })
        }, decode: { bytes in
            let components = try KeyDecoder.decode(bytes)
            // What decodes must account for every byte.
            let length = try bytes.withUnsafeBytes { try KeyDecoder.lengthOfComponents(components.count, in: $0) }
            #expect(length == bytes.count)
        })
    }

    @Test(arguments: testSeeds(3)) func journalEntries(seed: UInt64) throws {
        try Self.fuzz(seed: seed, valid: { random in
            let key = try KeyEncoding.encode([random.scalar()])
            let changes = (0..<Int.random(in: 0...3, using: &random.rng)).map { i in
                JournalRecord.IndexChange(indexID: UInt32(i), before: Bool.random(using: &random.rng) ? key : nil, after: key)
            }
            var bytes: [UInt8] = []
            JournalRecord(entityID: UInt32.random(in: 0...300, using: &random.rng), primaryKey: key,
                          kind: [.insert, .update, .delete].randomElement(using: &random.rng)!,
                          changedFieldIDs: (0..<UInt32.random(in: 0...4, using: &random.rng)).map { $0 * 7 },
                          indexChanges: changes).encode(into: &bytes)
            return bytes
        }, decode: { bytes in
            let record = try bytes.withUnsafeBytes { try JournalRecord.decode($0) }
            // What decodes encodes back to the same bytes: nothing is silently dropped.
            var again: [UInt8] = []
            record.encode(into: &again)
            #expect(again == bytes)
        })
    }

    @Test(arguments: testSeeds(3)) func commitHeaders(seed: UInt64) throws {
        try Self.fuzz(seed: seed, valid: { random in
            JournalKeys.commitHeader(timestamp: Date(timeIntervalSinceReferenceDate: random.double()), entries: Int.random(in: 0...100_000, using: &random.rng))
        }, decode: { bytes in
            _ = try bytes.withUnsafeBytes { try JournalKeys.decodeCommitHeader($0) }
        })
    }

    @Test(arguments: testSeeds(3)) func countNodes(seed: UInt64) throws {
        try Self.fuzz(seed: seed, valid: { random in
            let n = Int.random(in: 1...6, using: &random.rng)
            let fences = (0..<n).map { _ in random.bytes() }
            return CountNode(fences: fences, counts: (0..<n).map { _ in Int.random(in: 0...1_000, using: &random.rng) }).encoded()
        }, decode: { bytes in
            try bytes.withUnsafeBytes { raw in
                let view = try CountNodeView(raw)
                // Every part of any node a lookup accepts is readable, and sums cannot overflow.
                for i in 0..<view.count { _ = (view.entries(i), view.fence(i), view.child(containing: view.fence(i))) }
                _ = view.sum(before: view.count)
                // A node that passes the full check is exactly what it encodes.
                #expect(try CountNode(view).encoded() == bytes)
            }
        })
    }

    @Test(arguments: testSeeds(2)) func catalogs(seed: UInt64) throws {
        var catalog = Catalog()
        catalog.version = 3
        var item = CatalogEntity(name: "Item", id: 1, primaryKeyKind: "int", fields: [], indexes: [], nextFieldID: 3)
        item.fields = [CatalogField(id: 1, name: "id", kind: "int"), CatalogField(id: 2, name: "name", kind: "string")]
        item.indexes = [CatalogIndex(id: 1, entity: "Item", definition: IndexDefinition("byName", ["name"], unique: true))]
        catalog.entities = ["Item": item]
        let valid = catalog.encoded()
        try Self.fuzz(seed: seed, valid: { _ in valid }, decode: { bytes in _ = try Catalog.decode(bytes) })
    }

    /// An entity of nested values: structs, optionals, arrays of structs, a dictionary (large
    /// enough to be indexed rather than scanned), data, URLs, floats, small integers and enums.
    struct Profile: Entity, Equatable {
        enum Mood: String, Codable { case calm, loud }
        struct Place: Codable, Equatable { var city: String; var zip: UInt16?; var tags: [String] }
        var id: UInt64
        var home: Place
        var work: Place?
        var visits: [Place]
        var scores: [String: Double]
        var avatar: Data
        var site: URL?
        var ratio: Float
        var level: Int8
        var mood: Mood
    }

    static func profile(_ random: inout RandomValues) -> Profile {
        func place() -> Profile.Place {
            Profile.Place(city: random.string(), zip: Bool.random(using: &random.rng) ? UInt16.random(in: 0...UInt16.max, using: &random.rng) : nil,
                          tags: (0..<Int.random(in: 0...2, using: &random.rng)).map { _ in random.string() })
        }
        let scores = Dictionary((0..<Int.random(in: 0...30, using: &random.rng)).map { ("k\($0)", random.double()) }, uniquingKeysWith: { a, _ in a })
        return Profile(id: 1, home: place(), work: Bool.random(using: &random.rng) ? place() : nil,
                       visits: (0..<Int.random(in: 0...3, using: &random.rng)).map { _ in place() }, scores: scores,
                       avatar: Data(random.bytes()), site: Bool.random(using: &random.rng) ? URL(string: "https://example.com/\(random.int())") : nil,
                       ratio: Float(Int.random(in: -100...100, using: &random.rng)) / 4, level: Int8.random(in: -128...127, using: &random.rng),
                       mood: Bool.random(using: &random.rng) ? .calm : .loud)
    }

    /// A value like `value` with one part changed: a member dropped, replaced by any value, or
    /// a scalar of another kind.
    static func perturbed(_ value: FieldValue, _ random: inout RandomValues) -> FieldValue {
        switch value {
        case var .object(members) where !members.isEmpty && Int.random(in: 0..<3, using: &random.rng) > 0:
            let key = members.keys.sorted().randomElement(using: &random.rng)!
            switch Int.random(in: 0..<3, using: &random.rng) {
            case 0: members[key] = nil
            case 1: members[key] = random.value()
            default: members[key] = perturbed(members[key]!, &random)
            }
            return .object(members)
        case var .array(items) where !items.isEmpty && Bool.random(using: &random.rng):
            let i = Int.random(in: 0..<items.count, using: &random.rng)
            items[i] = perturbed(items[i], &random)
            return .array(items)
        default:
            return Bool.random(using: &random.rng) ? random.value() : random.scalar()
        }
    }

    /// Typed reads decode a record's stored bytes straight into the entity (``StoredDecoder``).
    /// The reference is independent: a second reader of the record format, then a Codable
    /// decoder over the record as one tree. For valid records, records whose fields hold other
    /// kinds or other shapes, and fuzzed bytes, both give the same value or the same error.
    @Test(arguments: testSeeds(2)) func typedRecordsDecodeAsTheReferenceDecoderDoes(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self, Note.self, Profile.self])
            var random = RandomValues(seed: seed)
            let example = Self.profile(&random)
            try store.write { tx in
                try tx.put(Item(id: 1, group: 2, score: 3, name: "a", flag: true, tag: UUID()))
                try tx.put(Note(id: "n", body: "b", priority: 1, when: Date(), labels: ["x"]))
                var full = example
                full.work = example.home
                full.site = URL(string: "https://example.com")
                try tx.put(full)
            }
            var outcomes = [0, 0]
            /// Compares both decoders on records made by `record` (fields by catalog number).
            func compare<E: Entity>(_ type: E.Type, id: FieldValue, _ record: (inout RandomValues, [String: UInt32]) throws -> [FieldValue]) throws {
                try store.read { tx in
                    var entity = try tx.entity(E.entityName)
                    let ids = Dictionary(uniqueKeysWithValues: entity.catalog.fields.map { ($0.name, $0.id) })
                    for _ in 0..<Self.iterations / 4 {
                        var valid: [UInt8] = []
                        RecordCodec.encode(byFieldID: try record(&random, ids), into: &valid)
                        let bytes = Bool.random(using: &random.rng) ? valid : Self.input(from: valid, &random)
                        let direct = bytes.withUnsafeBytes { raw in
                            Result { try tx.decodeEntity(E.self, raw, of: &entity, id: id) }
                        }
                        let reference = Result { try Self.referenceDecode(E.self, bytes, entity: entity, id: id) }
                        switch (direct, reference) {
                        case let (.success(a), .success(b)):
                            // Compared as stored values (total order: NaN equals NaN), not printed:
                            // Foundation traps printing some of the dates random bytes make.
                            let same = FieldValue.compare(try FieldValueEncoder.encode(a), try FieldValueEncoder.encode(b)) == 0
                            #expect(same, "seed \(seed): \(bytes)")
                            outcomes[0] += 1
                        case let (.failure(a), .failure(b)):
                            #expect(a is FeedstoreError && "\(a)" == "\(b)", "seed \(seed): \(bytes)\ndirect:    \(a)\nreference: \(b)")
                            outcomes[1] += 1
                        default:
                            Issue.record("seed \(seed): direct \(direct), reference \(reference) for \(bytes)")
                        }
                    }
                }
            }
            /// A record holding, for each named field, a value of the kind of `examples`' (or any value, or none).
            func scalars(_ examples: [String: FieldValue]) -> (inout RandomValues, [String: UInt32]) -> [FieldValue] {
                { random, ids in
                    var slots = [FieldValue](repeating: .null, count: Int(ids.values.max()! + 1))
                    for (name, like) in examples {
                        switch Int.random(in: 0..<8, using: &random.rng) {
                        case 0: slots[Int(ids[name]!)] = random.value()
                        case 1: slots[Int(ids[name]!)] = .null
                        default: slots[Int(ids[name]!)] = random.scalar(sameKindAs: like)
                        }
                    }
                    return slots
                }
            }
            try compare(Item.self, id: .int(1), scalars(["id": .int(1), "group": .int(2), "score": .double(1.5), "name": .string("n"),
                                                          "flag": .bool(true), "tag": .uuid(UUID())]))
            try compare(Note.self, id: .string("n"), scalars(["id": .string("n"), "body": .string("b"), "priority": .int(3),
                                                               "when": .date(Date()), "labels": .array([.string("x")])]))
            // Profiles: a valid profile's fields, some of them perturbed at any depth.
            try compare(Profile.self, id: .uint(1)) { random, ids in
                guard case let .object(fields) = try FieldValueEncoder.encode(Self.profile(&random)) else { return [] }
                var slots = [FieldValue](repeating: .null, count: Int(ids.values.max()! + 1))
                for (name, value) in fields {
                    slots[Int(ids[name]!)] = Int.random(in: 0..<4, using: &random.rng) == 0 ? Self.perturbed(value, &random) : value
                }
                return slots
            }
            // Both outcomes occur.
            #expect(outcomes[0] > 0 && outcomes[1] > 0, "seed \(seed): \(outcomes)")
        }
    }

    /// What a typed read of `bytes` gives by the reference decoders, with the read's errors.
    static func referenceDecode<E: Entity>(_ type: E.Type, _ bytes: [UInt8], entity: EntitySchema, id: FieldValue) throws -> E {
        let fields: [RecordField]
        do {
            fields = try ReferenceRecordDecoder.decode(bytes)
        } catch let FeedstoreError.corruptData(_, reason) {
            throw FeedstoreError.corruptData(what: "record \(entity.name) \(id.jsonText)", reason: reason)
        }
        var named: [String: FieldValue] = [:]
        for field in fields {
            guard let name = entity.catalog.fields.first(where: { $0.id == field.id })?.name else {
                throw FeedstoreError.corruptData(what: "record \(entity.name) \(id.jsonText)", reason: "field number \(field.id) is not in the catalog")
            }
            named[name] = field.value
        }
        do {
            return try ReferenceTreeDecoder.decode(E.self, from: .object(named))
        } catch {
            throw FeedstoreError.decodingFailed(entity: E.entityName, id: id, reason: "\(error)")
        }
    }
}
