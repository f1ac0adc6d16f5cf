@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Types that read their stored fields themselves (`StoredFieldsDecodable`) read what the same
/// type reads through `Codable`: every kind, conversions, optionals, nested values, and the same
/// typed errors, through every typed read (by id, by position, windows, scans, watchers).
@Suite(.blocking) struct StoredFieldsTests {
    struct Address: Codable, Equatable {
        var street: String
        var zip: Int32
    }

    /// Every kind of field, written and read through `Codable`.
    struct Wide: Entity {
        var id: UInt64
        var i8: Int8, i16: Int16, i32: Int32, i64: Int64, int: Int
        var u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64, uint: UInt
        var double: Double, float: Float
        var flag: Bool
        var text: String
        var date: Date
        var uuid: UUID
        var data: Data
        var note: String?
        var count: Int64?
        var address: Address
        var tags: [String]

        static let entityName = "Wide"
        static let indexes = [IndexDefinition("byI64", [.ascending("i64")])]

        /// The same fields, doubles by their bits (NaN included).
        func same(as other: Wide) -> Bool {
            id == other.id && i8 == other.i8 && i16 == other.i16 && i32 == other.i32 && i64 == other.i64 && int == other.int
                && u8 == other.u8 && u16 == other.u16 && u32 == other.u32 && u64 == other.u64 && uint == other.uint
                && double.bitPattern == other.double.bitPattern && float.bitPattern == other.float.bitPattern
                && flag == other.flag && text == other.text && date == other.date && uuid == other.uuid && data == other.data
                && note == other.note && count == other.count && address == other.address && tags == other.tags
        }
    }

    /// The same records, read field by field; the same `Codable` shape as ``Wide``, which it holds.
    struct WideDirect: StoredFieldsDecodable {
        var wide: Wide
        var id: UInt64 { wide.id }

        static let entityName = "Wide"
        static let indexes = Wide.indexes

        init(from decoder: any Decoder) throws { wide = try Wide(from: decoder) }
        func encode(to encoder: any Encoder) throws { try wide.encode(to: encoder) }

        init(storedFields fields: borrowing StoredFields) throws {
            wide = Wide(id: try fields.decode(UInt64.self, "id"),
                        i8: try fields.decode(Int8.self, "i8"), i16: try fields.decode(Int16.self, "i16"),
                        i32: try fields.decode(Int32.self, "i32"), i64: try fields.decode(Int64.self, "i64"),
                        int: try fields.decode(Int.self, "int"),
                        u8: try fields.decode(UInt8.self, "u8"), u16: try fields.decode(UInt16.self, "u16"),
                        u32: try fields.decode(UInt32.self, "u32"), u64: try fields.decode(UInt64.self, "u64"),
                        uint: try fields.decode(UInt.self, "uint"),
                        double: try fields.decode(Double.self, "double"), float: try fields.decode(Float.self, "float"),
                        flag: try fields.decode(Bool.self, "flag"), text: try fields.decode(String.self, "text"),
                        date: try fields.decode(Date.self, "date"), uuid: try fields.decode(UUID.self, "uuid"),
                        data: try fields.decode(Data.self, "data"),
                        note: try fields.decodeIfPresent(String.self, "note"), count: try fields.decodeIfPresent(Int64.self, "count"),
                        address: try fields.decode(Address.self, "address"), tags: try fields.decode([String].self, "tags"))
        }

        func same(as other: Wide) -> Bool { wide.same(as: other) }
    }

    static func randomWide(id: UInt64, _ random: inout RandomValues) -> Wide {
        var rng = random.rng
        defer { random.rng = rng }
        return Wide(id: id, i8: .random(in: .min ... .max, using: &rng), i16: .random(in: .min ... .max, using: &rng),
                    i32: .random(in: .min ... .max, using: &rng), i64: random.int(), int: .random(in: .min ... .max, using: &rng),
                    u8: .random(in: .min ... .max, using: &rng), u16: .random(in: .min ... .max, using: &rng),
                    u32: .random(in: .min ... .max, using: &rng), u64: .random(in: .min ... .max, using: &rng),
                    uint: .random(in: .min ... .max, using: &rng), double: random.double(), float: Float(random.double()),
                    flag: .random(using: &rng), text: random.string(), date: Date(timeIntervalSinceReferenceDate: Double(random.int() % 1_000_000_000)),
                    uuid: UUID(), data: Data(random.bytes()), note: Bool.random(using: &rng) ? random.string() : nil,
                    count: Bool.random(using: &rng) ? random.int() : nil, address: Address(street: random.string(), zip: .random(in: 0...99_999, using: &rng)),
                    tags: (0..<Int.random(in: 0...3, using: &rng)).map { _ in random.string() })
    }

    @Test(arguments: testSeeds(3))
    func everyTypedReadReadsWhatCodableReads(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Wide.self])
            defer { store.close() }
            var random = RandomValues(seed: seed)
            let records = (1...200).map { Self.randomWide(id: UInt64($0), &random) }
            try store.write { tx in for record in records { try tx.insert(record) } }
            let codable = Query(Wide.self, index: "byI64"), direct = Query(WideDirect.self, index: "byI64")
            try store.read { (tx) throws -> Void in
                let scanned = try tx.objects(in: direct), expected = try tx.objects(in: codable)
                #expect(scanned.count == records.count, "seed \(seed)")
                #expect(zip(scanned, expected).allSatisfy { $0.same(as: $1) }, "seed \(seed): a scan")
                for position in stride(from: 0, to: records.count, by: 7) {
                    let one = try #require(try tx.object(at: position, in: direct)), other = try #require(try tx.object(at: position, in: codable))
                    #expect(one.same(as: other), "seed \(seed): object(at: \(position))")
                }
                let window = try tx.objects(in: direct, offset: 50, limit: 30)
                #expect(zip(window, try tx.objects(in: codable, offset: 50, limit: 30)).allSatisfy { $0.same(as: $1) }, "seed \(seed): a window")
                for record in records.prefix(20) {
                    let byID = try #require(try tx.get(WideDirect.self, id: record.id))
                    #expect(byID.same(as: try #require(try tx.get(Wide.self, id: record.id))), "seed \(seed): id \(record.id)")
                }
            }
            // A watcher's batches decode their rows the same way.
            let watcher = store.watch(direct)
            defer { watcher.cancel() }
            let initial = try #require(try watcher.next(timeout: 5))
            let expected = try store.read { try $0.objects(in: codable) }
            #expect(zip(initial.inserts.map(\.value), expected).allSatisfy { $0.same(as: $1) }, "seed \(seed): the initial batch")
            var changed = records[3]
            changed.text = "changed"
            changed.note = nil
            try store.write { try $0.put(changed) }
            let update = try #require(try watcher.next(timeout: 5))
            #expect(update.updates.map(\.value.wide.text) == ["changed"] && update.updates.map(\.value.wide.note) == [nil], "seed \(seed): an update")
        }
    }

    /// Reads one field of "Wide" records as another type would.
    struct Narrow: StoredFieldsDecodable {
        var id: UInt64
        var value: UInt8
        static let entityName = "Wide"
        init(storedFields fields: borrowing StoredFields) throws {
            id = try fields.decode(UInt64.self, "id")
            value = try fields.decode(UInt8.self, "i64")
        }
    }

    struct NarrowCodable: Entity {
        var id: UInt64
        var i64: UInt8
        static let entityName = "Wide"
    }

    struct Mistyped: StoredFieldsDecodable {
        var id: UInt64
        var flag: String
        var missing: String?
        static let entityName = "Wide"
        init(storedFields fields: borrowing StoredFields) throws {
            id = try fields.decode(UInt64.self, "id")
            missing = try fields.decodeIfPresent(String.self, "absent")
            flag = try fields.decode(String.self, "flag")
        }
    }

    struct Missing: StoredFieldsDecodable {
        var id: UInt64
        static let entityName = "Wide"
        init(storedFields fields: borrowing StoredFields) throws {
            id = try fields.decode(UInt64.self, "id")
            _ = try fields.decode(Int64.self, "absent")
        }
    }

    @Test func conversionsAndErrorsAreThoseOfCodable() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Wide.self])
            defer { store.close() }
            var random = RandomValues(seed: 7)
            var small = Self.randomWide(id: 1, &random), large = Self.randomWide(id: 2, &random)
            (small.i64, large.i64) = (200, 300)
            try store.write { tx in try tx.insert(small); try tx.insert(large) }
            try store.read { (tx) throws -> Void in
                // An Int64 that fits converts, as through Codable.
                #expect(try tx.get(Narrow.self, id: 1)?.value == 200)
                #expect(try tx.get(NarrowCodable.self, id: 1)?.i64 == 200)
                // One that does not fit is the same typed error, naming the field.
                let reads: [() throws -> Void] = [{ _ = try tx.get(Narrow.self, id: 2) }, { _ = try tx.get(NarrowCodable.self, id: 2) }]
                for read in reads {
                    let error = #expect(throws: FeedstoreError.self) { try read() }
                    guard case let .decodingFailed(entity, id, reason) = error else { Issue.record("\(String(describing: error))"); continue }
                    #expect(entity == "Wide" && id == .uint(2) && reason.contains("i64") && reason.contains("300 does not fit UInt8"), "\(reason)")
                }
                // A value of another kind, and a missing field, name the field too.
                let mistyped = #expect(throws: FeedstoreError.self) { _ = try tx.get(Mistyped.self, id: 1) }
                guard case let .decodingFailed(_, _, reason)? = mistyped else { Issue.record("\(String(describing: mistyped))"); return }
                #expect(reason.contains("flag") && reason.contains("expected string, found bool"), "\(reason)")
                let missing = #expect(throws: FeedstoreError.self) { _ = try tx.get(Missing.self, id: 1) }
                guard case let .decodingFailed(_, _, missingReason)? = missing else { Issue.record("\(String(describing: missing))"); return }
                #expect(missingReason.contains("missing field absent"), "\(missingReason)")
            }
        }
    }
}
