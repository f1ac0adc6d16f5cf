@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A field of every type the library stores, nested structs, optionals, enums, collections and
/// a renamed coding key, for mapping key paths to stored names.
struct EveryFieldType: Entity {
    enum Mood: String, Codable, CaseIterable, FieldValueConvertible { case calm, busy }
    enum Level: Int, Codable, CaseIterable, FieldValueConvertible { case low = 1, high = 2 }
    struct Address: Codable, Sendable {
        var city: String
        var zip: Int32
        var geo: Point?
    }
    struct Point: Codable, Sendable {
        var lat: Double
    }
    struct Wrapper: Codable, Sendable {
        var only: Int64
    }

    var id: UUID
    var int: Int, int8: Int8, int16: Int16, int32: Int32, int64: Int64
    var uint: UInt, uint8: UInt8, uint16: UInt16, uint32: UInt32, uint64: UInt64
    var double: Double, float: Float, bool: Bool, string: String
    var date: Date, uuid: UUID, data: Data, url: URL, decimal: Decimal
    var maybe: Int64?
    var maybeDate: Date?
    var mood: Mood
    var level: Level
    var address: Address
    var wrapper: Wrapper
    var tags: [String]
    var attributes: [String: Int]
    var dynamic: FieldValue
    var renamed: String

    /// Computed: not stored, though each reads stored fields.
    var isQuiet: Bool { mood == .calm }
    var notBool: Bool { !bool }
    var constant: Int { 7 }
    var sum: Int64 { int64 + Int64(int32) }

    enum CodingKeys: String, CodingKey {
        case id, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, double, float, bool, string
        case date, uuid, data, url, decimal, maybe, maybeDate, mood, level, address, wrapper, tags, attributes, dynamic
        case renamed = "storedAs"
    }
}

@Suite(.blocking) struct KeyPathFieldsTests {
    func field(_ keyPath: PartialKeyPath<EveryFieldType>) -> String? {
        try? KeyPathFields.field(of: keyPath).get()
    }

    @Test func everyStoredFieldMapsToItsName() {
        let expected: [(PartialKeyPath<EveryFieldType>, String)] = [
            (\.id, "id"), (\.int, "int"), (\.int8, "int8"), (\.int16, "int16"), (\.int32, "int32"), (\.int64, "int64"),
            (\.uint, "uint"), (\.uint8, "uint8"), (\.uint16, "uint16"), (\.uint32, "uint32"), (\.uint64, "uint64"),
            (\.double, "double"), (\.float, "float"), (\.bool, "bool"), (\.string, "string"), (\.date, "date"),
            (\.uuid, "uuid"), (\.data, "data"), (\.url, "url"), (\.decimal, "decimal"), (\.maybe, "maybe"),
            (\.maybeDate, "maybeDate"), (\.mood, "mood"), (\.level, "level"), (\.address, "address"),
            (\.address.city, "address.city"), (\.address.zip, "address.zip"), (\.address.geo, "address.geo"),
            (\.address.geo?.lat, "address.geo.lat"), (\.wrapper, "wrapper"), (\.wrapper.only, "wrapper.only"),
            (\.tags, "tags"), (\.attributes, "attributes"), (\.dynamic, "dynamic"), (\.renamed, "storedAs"),
            (\.date.descending, "date"), (\.maybe.descending, "maybe"), (\.mood.descending, "mood"),
        ]
        for (keyPath, name) in expected {
            #expect(field(keyPath) == name, "\(keyPath)")
        }
    }

    @Test func aComputedPropertyIsRefusedNamingIt() {
        for keyPath: PartialKeyPath<EveryFieldType> in [\.isQuiet, \.notBool, \.constant, \.sum] {
            let result = KeyPathFields.field(of: keyPath)
            #expect(throws: KeyPathFields.Problem.self, "\(keyPath)") { try result.get() }
            if case let .failure(problem) = result {
                #expect(problem.keyPath == String(describing: keyPath))
                #expect(problem.error(entity: "EveryFieldType", usedBy: "index EveryFieldType.x").description
                    .contains("is not a stored field of EveryFieldType"))
            }
        }
    }

    @Test func typedDeclarationsGiveTheDefinitionsNamesWouldGive() {
        let byName: [IndexDefinition] = [
            IndexDefinition("byFolderDate", [.ascending("folder"), .descending("date")]),
            IndexDefinition("unreadByDate", [.descending("date")], where: .field("isRead") == false),
            IndexDefinition("byContact", [.ascending("contactId")]),
        ]
        #expect(Message.indexes == byName)
        let predicate: IndexPredicate<EveryFieldType> = \.int64 >= 3 && !(\.bool == true) || \.maybe == nil && \.mood != .busy
        #expect(predicate.condition == (.field("int64") >= 3 && !(.field("bool") == true) || .field("maybe") == nil && .field("mood") != "busy"))
        #expect(predicate.problem == nil)
        let compound = EveryFieldType.index(\.address.city, \.level.descending, \.id)
        #expect(compound.definition == IndexDefinition("byAddressCityLevelId", [.ascending("address.city"), .descending("level"), .ascending("id")]))
    }

    @Test func aStoreRefusesAnIndexOnAComputedProperty() throws {
        struct Quiet: Entity {
            var id: UInt64
            var mood: EveryFieldType.Mood
            var isQuiet: Bool { mood == .calm }
            static let byQuiet = index("byQuiet", \.isQuiet)
            static let indexes = [byQuiet.definition]
        }
        try withTemporaryDirectory { dir in
            #expect { try Store(path: dir + "/s", entities: [Quiet.self]) } throws: { error in
                guard case let FeedstoreError.unknownKeyPath(entity, keyPath, usedBy, _) = error else { return false }
                return entity == "Quiet" && usedBy == "index Quiet.byQuiet" && keyPath.hasPrefix("\\Quiet.")
            }
            #expect(!FileManager.default.fileExists(atPath: dir + "/s"), "a refused open creates nothing")
        }
    }

    /// An enum whose raw values the made-up input cannot hit, and that is not `CaseIterable`:
    /// the refusal says what to do.
    @Test func anEnumThatIsNotCaseIterableIsNamedAsTheCause() throws {
        struct Ticket: Entity {
            enum Kind: String, Codable, FieldValueConvertible { case bug = "bug-report", idea = "feature-idea" }
            var id: UInt64
            var kind: Kind
            static let byKind = index(\.kind)
            static let indexes = [byKind.definition]
        }
        try withTemporaryDirectory { dir in
            #expect { try Store(path: dir + "/s", entities: [Ticket.self]) } throws: { error in
                guard case let FeedstoreError.unknownKeyPath(entity, _, usedBy, reason) = error else { return false }
                return entity == "Ticket" && usedBy == "index Ticket.byKind" && reason.contains("CaseIterable")
                    && reason.contains("by field name")
            }
        }
    }

    /// The conversion of Swift values is the one records are written with.
    @Test func swiftValuesConvertAsRecordsStoreThem() throws {
        let values: [any FieldValueConvertible] = [
            Int(-5), Int8(-5), Int16(-5), Int32(-5), Int64(-5), UInt(5), UInt8(5), UInt16(5), UInt32(5), UInt64.max,
            Double(2.5), Float(2.5), true, "text", Date(timeIntervalSince1970: 12.5), UUID(), Data([1, 2]),
            URL(string: "https://example.com/a")!, Int64?.none, Int64?.some(3), EveryFieldType.Mood.busy, EveryFieldType.Level.high,
        ]
        for value in values {
            #expect(try FieldValueEncoder.encode(value) == value.fieldValue, "\(type(of: value))")
        }
    }
}
