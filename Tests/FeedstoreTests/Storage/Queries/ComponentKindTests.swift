@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// One field, and one index, per kind a key component holds.
struct EveryKeyKind: Entity {
    var id: UInt64
    var b: Bool
    var i: Int64
    var u: UInt64
    var d: Double
    var t: Date
    var s: String
    var y: Data
    var g: UUID

    static let indexes = ["b", "i", "u", "d", "t", "s", "y", "g"].map { IndexDefinition("by_\($0)", [.ascending($0)]) }
}

/// A range component whose kind is not the index component's converts where nothing is lost, or
/// is refused naming the index, the component and both kinds: never an empty answer.
@Suite(.blocking) struct ComponentKindTests {
    static let uuid = UUID(uuidString: "6F1C2A9E-3B7D-4C1E-9A2B-5D8E7F6A4B3C")!
    /// The field of each kind, and the value record 1 holds there.
    static let fields: [(kind: String, field: String, value: FieldValue)] = [
        ("bool", "b", .bool(true)), ("int", "i", .int(5)), ("uint", "u", .uint(5)), ("double", "d", .double(5)),
        ("date", "t", .date(Date(timeIntervalSince1970: 5))), ("string", "s", .string("5")), ("bytes", "y", .bytes([5])),
        ("uuid", "g", .uuid(uuid)),
    ]
    /// The pairs (index component's kind, given value's kind) that convert: integers between
    /// signed and unsigned, integers and integral doubles, and numbers to dates (seconds since
    /// 1970, as JSON gives them). Written out here, apart from the library's table.
    static let converting: Set<[String]> = [
        ["uint", "int"], ["int", "uint"], ["double", "int"], ["double", "uint"], ["int", "double"], ["uint", "double"],
        ["date", "int"], ["date", "double"],
    ]

    func withStore(_ body: (Store) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [EveryKeyKind.self])
            defer { store.close() }
            try store.write { tx in
                try tx.put(EveryKeyKind(id: 1, b: true, i: 5, u: 5, d: 5, t: Date(timeIntervalSince1970: 5), s: "5", y: Data([5]), g: Self.uuid))
                try tx.put(EveryKeyKind(id: 2, b: false, i: 6, u: 6, d: 6.5, t: Date(timeIntervalSince1970: 6), s: "6", y: Data([6]),
                                        g: UUID()))
            }
            try body(store)
        }
    }

    /// Every way to ask about a range: typed and by name, counts, rows, positions, ranks and a
    /// watcher's first batch. Returns the counts each gave (all must agree).
    func answers(_ store: Store, index: String, range: IndexRange) throws -> [Int] {
        let query = Query(EveryKeyKind.self, index: index, range: range)
        var counts = try store.read { tx in
            [try tx.count(query), try tx.objects(in: query).count, try tx.position(of: 1, in: query) == nil ? 0 : 1,
             try tx.entry(entity: "EveryKeyKind", index: index, range: range, at: 0) == nil ? 0 : 1,
             try tx.entries(entity: "EveryKeyKind", index: index, range: range).count]
        }
        let watcher = store.watch(query)
        defer { watcher.cancel() }
        counts.append(try #require(try watcher.poll()).inserts.count)
        return counts
    }

    @Test func everyKindPairConvertsWithoutLossOrIsRefused() throws {
        try withStore { (store: Store) throws in
            for component in Self.fields {
                let index = "by_\(component.field)"
                #expect(try answers(store, index: index, range: .prefix(component.value)) == [1, 1, 1, 1, 1, 1], "\(component.kind)")
                for given in Self.fields where given.kind != component.kind {
                    let pair = "\(component.kind) component, \(given.kind) value"
                    for range in [IndexRange.prefix(given.value), IndexRange(from: .inclusive([given.value]), to: .inclusive([given.value]))] {
                        if Self.converting.contains([component.kind, given.kind]) {
                            #expect(try answers(store, index: index, range: range) == [1, 1, 1, 1, 1, 1], "\(pair)")
                        } else {
                            #expect("\(pair)") { try answers(store, index: index, range: range) } throws: { error in
                                guard case let FeedstoreError.invalidRange(entity, name, reason) = error else { return false }
                                return entity == "EveryKeyKind" && name == index && reason.contains("component 1 is field \(component.field)")
                                    && reason.contains("stored as \(component.kind)") && reason.contains("(\(given.kind))")
                            }
                        }
                    }
                    // Ranks before a key convert by the same rules.
                    let rank = { try store.read { try $0.rank(entity: "EveryKeyKind", index: index, before: [given.value]) } }
                    if Self.converting.contains([component.kind, given.kind]) {
                        #expect(try rank() == 0, "\(pair)")
                    } else {
                        #expect(throws: FeedstoreError.self, "\(pair)") { try rank() }
                    }
                }
            }
        }
    }

    /// Swift values of every type the conversion table takes, as range components on every
    /// component kind: each behaves as the stored value it converts to.
    @Test func swiftValuesOfEveryTypeConvertOrAreRefused() throws {
        let values: [(type: String, value: any FieldValueConvertible)] = [
            ("Int", Int(5)), ("Int8", Int8(5)), ("Int16", Int16(5)), ("Int32", Int32(5)), ("Int64", Int64(5)), ("UInt", UInt(5)),
            ("UInt8", UInt8(5)), ("UInt16", UInt16(5)), ("UInt32", UInt32(5)), ("UInt64", UInt64(5)), ("Double", Double(5)),
            ("Float", Float(5)), ("Bool", true), ("String", "5"), ("URL", URL(string: "5")!), ("Date", Date(timeIntervalSince1970: 5)),
            ("Data", Data([5])), ("UUID", Self.uuid), ("Int64?", Int64?.some(5)),
        ]
        try withStore { (store: Store) throws in
            for component in Self.fields {
                let index = "by_\(component.field)"
                for (type, value) in values {
                    let given = value.fieldValue.kindName
                    let range = prefix(value)
                    if given == component.kind || Self.converting.contains([component.kind, given]) {
                        #expect(try answers(store, index: index, range: range) == [1, 1, 1, 1, 1, 1], "\(component.kind) component, \(type)")
                    } else {
                        #expect(throws: FeedstoreError.self, "\(component.kind) component, \(type)") { try answers(store, index: index, range: range) }
                    }
                }
            }
        }
    }

    /// `.prefix` of one Swift value, its type opened from the existential.
    private func prefix<V: FieldValueConvertible>(_ value: V) -> IndexRange { .prefix(value) }

    @Test func conversionsThatWouldLoseSomethingAreRefused() throws {
        try withStore { (store: Store) throws in
            let lossy: [(index: String, value: FieldValue)] = [
                ("by_u", .int(-1)), ("by_i", .uint(UInt64(Int64.max) + 1)), ("by_i", .double(5.5)), ("by_u", .double(-1)),
                ("by_d", .int(1 << 53 + 1)), ("by_d", .uint(UInt64.max)), ("by_t", .string("1970-01-01")),
                ("by_g", .string("not a uuid")),
            ]
            for (index, value) in lossy {
                #expect(throws: FeedstoreError.self, "\(index) \(value.jsonText)") { try answers(store, index: index, range: .prefix(value)) }
            }
            // Null is a value of every kind (optional fields sort it first).
            #expect(try store.read { try $0.count(Query(EveryKeyKind.self, index: "by_u", range: .prefix(.null))) } == 0)
        }
    }

    @Test func idsByNameConvertOrAreRefused() throws {
        try withStore { (store: Store) throws in
            try store.read { (tx: ReadTransaction) throws in
                #expect(try tx.record(entity: "EveryKeyKind", id: .int(1))?["s"] == .string("5"))
                #expect(try tx.recordJSON(entity: "EveryKeyKind", id: .double(2)) != nil)
                #expect(throws: FeedstoreError.self) { try tx.record(entity: "EveryKeyKind", id: .string("1")) }
                #expect(throws: FeedstoreError.self) { try tx.record(entity: "EveryKeyKind", id: .int(-1)) }
                #expect(try tx.position(entity: "EveryKeyKind", index: "by_s", of: .int(2)) == 1)
            }
        }
    }

    @Test func unknownIndexesListTheEntitysIndexes() throws {
        try withStore { (store: Store) throws in
            #expect { try store.read { try $0.count(Query(EveryKeyKind.self, index: "by_x")) } } throws: { error in
                "\(error)" == "entity EveryKeyKind has no index named by_x; its indexes are by_b, by_i, by_u, by_d, by_t, by_s, by_y, by_g, id. An index is in the store once its entity's `indexes` lists it (`static let indexes = [by_x.definition]`)"
            }
        }
    }
}
