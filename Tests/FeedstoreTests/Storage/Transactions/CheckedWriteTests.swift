@_spi(Replication) @testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Records written by field name are held to what the entity's type reads: kinds learned from
/// its `Decodable` conformance, required fields, declared names. A refused record is a typed
/// error naming the entity, id and field, and nothing of its transaction is written; `verify`
/// finds records that break the same rules when they got in below the checked path.
@Suite(.blocking) struct CheckedWriteTests {
    struct Address: Codable, Sendable { var city: String; var zip: UInt32? }
    enum Kind: String, Codable, Sendable, CaseIterable { case person, company }
    enum Level: Int, Codable, Sendable, CaseIterable { case low, high }

    struct Person: Entity {
        var id: Int64
        var name: String
        var born: Date
        var tag: UUID?
        var kind: Kind
        var level: Level
        var home: Address
        var work: Address?
        var aliases: [String]
        var extra: [String: Int]
        var note: FieldValue?
        var photo: Data?
        var score: Double
        var visits: UInt64
        var nickname: String??
    }

    @Test func kindsAreLearnedFromTheDecodeCalls() {
        let kinds = DeclaredFields.of(Person.self).kinds
        #expect(kinds == [
            "id": "int", "name": "string", "born": "date", "tag": "uuid?", "kind": "string", "level": "int",
            "home": "object", "home.city": "string", "home.zip": "uint?",
            "work": "object?", "work.city": "string", "work.zip": "uint?",
            "aliases": "array", "extra": "object", "note": "any?", "photo": "bytes?", "score": "double", "visits": "uint",
            "nickname": "string?",
        ])
    }

    private func withPeople(_ body: (Store) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Person.self], options: StoreOptions(durability: .none))
            try body(store)
        }
    }

    private let valid: [String: FieldValue] = [
        "id": 1, "name": "Ada", "born": "1815-12-10T00:00:00Z", "kind": "person", "level": 1,
        "home": .object(["city": "London"]), "aliases": .array([]), "extra": .object(["a": 1]), "score": 2, "visits": 3,
    ]

    private func refusal(_ store: Store, _ fields: [String: FieldValue], keeping: Bool = false) -> (field: String, reason: FieldRefusal)? {
        do {
            try store.write { tx in try tx.put(entity: "Person", id: fields["id"] ?? 1, fields: fields, keepingUndeclaredFields: keeping) }
            return nil
        } catch let FeedstoreError.recordRefused(entity, _, field, reason) {
            #expect(entity == "Person")
            return (field, reason)
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func valuesConvertLosslesslyAndReadBackAsTheType() throws {
        try withPeople { store in
            var fields = valid
            fields["photo"] = .string(Data([1, 2, 3]).base64EncodedString())
            fields["tag"] = "2F1B3C4D-0000-4000-8000-000000000001"
            fields["visits"] = .double(3)  // an integral double: a JSON writer's 3.0
            fields["home"] = .object(["city": "London", "zip": 12345])
            #expect(refusal(store, fields) == nil)
            let person = try #require(try store.read { try $0.get(Person.self, id: 1) })
            #expect(person.born == ISO8601DateFormatter().date(from: "1815-12-10T00:00:00Z"))
            #expect(person.photo == Data([1, 2, 3]) && person.visits == 3 && person.home.zip == 12345 && person.level == .high)
            #expect(person.tag == UUID(uuidString: "2F1B3C4D-0000-4000-8000-000000000001"))
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func valuesOfAnotherKindAreRefusedAndNothingIsWritten() throws {
        try withPeople { store in
            let cases: [(String, FieldValue, String)] = [
                ("born", "yesterday", "date"), ("name", 5, "string"), ("score", "high", "double"), ("visits", -1, "uint"),
                ("visits", 1.5, "uint"), ("tag", "not a uuid", "uuid"), ("photo", "%%%", "bytes"), ("home", "London", "object"),
                ("aliases", "x", "array"), ("level", "high", "int"),
            ]
            for (field, value, expected) in cases {
                var fields = valid
                fields[field] = value
                let refused = refusal(store, fields)
                #expect(refused?.field == field, "\(field)")
                #expect(refused?.reason == .wrongKind(expected: expected, value: value), "\(field)")
            }
            // A nested field is named by its path.
            var nested = valid
            nested["home"] = .object(["city": 7])
            #expect(refusal(store, nested)?.field == "home.city")
            let count = try store.read { try $0.count(entity: "Person") }
            #expect(count == 0)
            let born = try store.catalog.entities["Person"]?.fields.first { $0.name == "born" }
            #expect(born?.kind != "string")
        }
    }

    @Test func requiredFieldsMustBePresentAndOptionalOnesMayNot() throws {
        try withPeople { store in
            for field in ["name", "born", "home", "score"] {
                var fields = valid
                fields[field] = nil
                #expect(refusal(store, fields)?.reason == .missing(expected: DeclaredFields.of(Person.self).kinds[field]!), "\(field)")
                fields[field] = .null
                #expect(refusal(store, fields)?.field == field, "\(field) null")
            }
            var fields = valid
            fields["home"] = .object([:])
            #expect(refusal(store, fields)?.field == "home.city")
            // Optional fields (tag, work, note, photo, nickname, home.zip) may be absent or null.
            fields = valid
            fields["tag"] = .null
            #expect(refusal(store, fields) == nil)
            let person = try store.read { try $0.get(Person.self, id: 1) }
            #expect(person?.name == "Ada")
        }
    }

    @Test func undeclaredFieldsAreRefusedUnlessKept() throws {
        try withPeople { store in
            var fields = valid
            fields["extra2"] = .object(["a": 1])
            let refused = refusal(store, fields)
            #expect(refused?.field == "extra2")
            if case let .undeclared(declared)? = refused?.reason { #expect(declared.contains("name")) } else { Issue.record("\(String(describing: refused))") }
            fields["home"] = .object(["city": "Paris", "floor": 3])
            #expect(refusal(store, fields, keeping: false)?.field == "home.floor")
            // Kept on request, at every depth; the type still reads the record.
            #expect(refusal(store, fields, keeping: true) == nil)
            let person = try store.read { try $0.get(Person.self, id: 1) }
            #expect(person?.home.city == "Paris")
            // Open fields (a dictionary, a FieldValue) take any members.
            fields = valid
            fields["extra"] = .object(["anything": 1, "at": 2])
            fields["note"] = .object(["free": .array([1, "two"])])
            #expect(refusal(store, fields) == nil)
        }
    }

    @Test func aRefusalAbortsTheWholeTransaction() throws {
        try withPeople { store in
            var bad = valid
            bad["id"] = 2
            bad["born"] = "yesterday"
            let before = try store.read { try $0.newestSequence() }
            #expect(throws: FeedstoreError.self) {
                try store.write { tx in
                    try tx.put(entity: "Person", id: 1, fields: valid)
                    try tx.put(entity: "Person", id: 2, fields: bad)
                }
            }
            #expect(try store.read { try $0.count(entity: "Person") } == 0)
            #expect(try store.read { try $0.newestSequence() } == before)
        }
    }

    @Test func theMessageNamesEntityIdFieldKindAndValue() {
        let error = FeedstoreError.recordRefused(entity: "Message", id: 5, field: "folder", reason: .wrongKind(expected: "int", value: "abc"))
        #expect(error.description == #"Message 5 was refused: field folder must hold an int, not a string ("abc")"#)
        let missing = FeedstoreError.recordRefused(entity: "Message", id: 7, field: "date", reason: .missing(expected: "date"))
        #expect(missing.localizedDescription == "Message 7 was refused: field date (date) is required and missing")
    }

    /// LMDB's errors about damaged pages say where to look next; every public error type is a
    /// LocalizedError whose description an alert can show.
    @Test func errorsDescribeThemselvesAndDamagedPagesPointToVerify() {
        for code in [LMDBError.pageNotFound, LMDBError.corrupted] {
            let error = LMDBError(code: code, operation: "mdb_get")
            #expect(error.description.contains("storectl verify"), "\(error)")
            #expect((error as any Error).localizedDescription == error.description)
        }
        #expect(!LMDBError(code: LMDBError.mapFull, operation: "mdb_put").description.contains("verify"))
        let invalid = SectionedMirror<Int>.InvalidBatch(description: "delete 3 of 2 rows")
        #expect((invalid as any Error).localizedDescription == "delete 3 of 2 rows")
    }

    @Test func entitiesWithoutTypesHoldTheKindsTheirRecordsGave() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", options: StoreOptions(durability: .none))
            try store.declare(entity: "Doc", primaryKeyKind: "string")
            try store.write { tx in try tx.put(entity: "Doc", id: "a", fields: ["id": "a", "pages": 3, "title": "first"]) }
            // New fields join, and fields may be absent; a learned field keeps its kind.
            try store.write { tx in try tx.put(entity: "Doc", id: "b", fields: ["id": "b", "author": "me"]) }
            #expect { try store.write { tx in try tx.put(entity: "Doc", id: "c", fields: ["id": "c", "pages": "many"]) } } throws: { error in
                guard case let FeedstoreError.recordRefused(entity, id, field, reason) = error else { return false }
                return entity == "Doc" && id == "c" && field == "pages" && reason == .wrongKind(expected: "int", value: "many")
            }
            #expect(try store.catalog.entities["Doc"]?.field(named: "pages")?.kind == "int")
            #expect(try store.read { try $0.count(entity: "Doc") } == 2)
        }
    }

    @Test func kindsSurviveReopeningWithoutTheType() throws {
        try withTemporaryDirectory { dir in
            try Store(path: dir + "/s", entities: [Message.self], options: StoreOptions(durability: .none)).close()
            let store = try Store(path: dir + "/s", options: StoreOptions(durability: .none))
            #expect(try store.catalog.entities["Message"]?.declaredKinds?["date"] == "date")
            #expect { try store.write { tx in
                try tx.put(entity: "Message", id: 5, fields: ["id": 5, "folder": "abc", "date": "2026-01-01T00:00:00Z", "title": "t",
                                                             "isRead": false, "contactId": 1])
            } } throws: { error in
                if case let FeedstoreError.recordRefused(_, _, field, _) = error { return field == "folder" }
                return false
            }
            // Another store declared like this one holds its records to the same kinds.
            let copy = try Store(path: dir + "/copy", options: StoreOptions(durability: .none))
            try copy.declare(like: try #require(try store.catalog.entities["Message"]))
            #expect(throws: FeedstoreError.self) { try copy.write { tx in try tx.put(entity: "Message", id: 7, fields: ["id": 7, "folder": 1]) } }
        }
    }

    /// Records written through the LMDB layer, below the checked path: verify names each one.
    @Test func verifyFindsRecordsTheirTypeCannotRead() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self], options: StoreOptions(durability: .none))
            let date = Date(timeIntervalSince1970: 1_000)
            try store.write { tx in
                for id in UInt64(1)...3 { try tx.put(Message(id: id, folder: 1, date: date, title: "t\(id)", isRead: true, contactId: 1)) }
            }
            #expect(try store.verify().isEmpty)
            try store.write { tx in
                let entity = try tx.schema.entity("Message")
                func overwrite(_ id: UInt64, _ change: (inout RecordValues) -> Void) throws {
                    let key = try KeyEncoding.encode([.uint(id)])
                    let stored = try #require(try tx.access { try $0.get(entity.records, key: key) })
                    var values = try stored.withUnsafeBytes { bytes in
                        var schema = entity
                        return try tx.decodeValues(bytes, of: &schema, id: .uint(id))
                    }
                    change(&values)
                    var bytes: [UInt8] = []
                    values.encode(into: &bytes)
                    _ = try tx.access { try $0.put(entity.records, key: key, value: bytes) }
                }
                try overwrite(2) { $0.set(.int(42), at: try! #require(entity.slot(named: "title")).id) }
                try overwrite(3) { $0.set(.null, at: try! #require(entity.slot(named: "title")).id) }
            }
            let issues = try store.verify()
            #expect(issues.map(\.location) == ["records:Message", "records:Message"])
            #expect(issues[0].problem.contains("Message 2: field title must hold a string, not an int (42)"))
            #expect(issues[1].problem.contains("Message 3: field title (string) is required and missing"))
        }
    }

    /// A replica stores its origin's records as they are: values keep their exact kinds, kept
    /// undeclared fields stay, nulls are no values, and a bad entity or id writes nothing.
    @Test func recordsStoredExactlyAsTheOriginHoldsThemReadBackEqual() throws {
        try withPeople { store in
            let born = Date(timeIntervalSince1970: 1_000.123_456_789)
            let person = Person(id: 9, name: "Grace", born: born, tag: UUID(), kind: .company, level: .high,
                                home: Address(city: "Arlington", zip: 22201), work: nil, aliases: ["Amazing"], extra: ["b": 2],
                                note: .array([.int(1), .string("x")]), photo: Data([9, 8]), score: 1.5, visits: 7, nickname: nil)
            var fields = try RecordWrite.fields(of: person)
            fields["keptByTheOrigin"] = .string("undeclared")
            fields["work"] = .null
            let record = try ShippedRecord(validating: FieldValue.object(fields).storedEncoding)
            try store.write { tx in try tx.put(entity: "Person", id: 9, stored: record) }
            let read = try #require(try store.read { try $0.get(Person.self, id: 9) })
            #expect(read.born == born && read.tag == person.tag && read.home.zip == 22201 && read.note == person.note && read.photo == person.photo)
            let stored = try #require(try store.read { try $0.record(entity: "Person", id: 9) })
            #expect(stored["keptByTheOrigin"] == .string("undeclared"))
            #expect(stored["work"] == nil)
            #expect(try store.verify().isEmpty)

            // Now that the catalog has every field, a record goes from its bytes to the slots
            // without a dictionary: it reads back the same, and its index entries follow.
            var second = fields
            second["name"] = .string("Ada")
            second["keptByTheOrigin"] = .string("again")
            let secondRecord = try ShippedRecord(validating: FieldValue.object(second).storedEncoding)
            try store.write { tx in try tx.put(entity: "Person", id: 10, stored: secondRecord) }
            let secondRead = try #require(try store.read { try $0.record(entity: "Person", id: 10) })
            #expect(secondRead == (try secondRecord.fields()).filter { $0.value != .null })
            #expect(try store.read { try $0.get(Person.self, id: 10) }?.name == "Ada")
            #expect(try store.verify().isEmpty)
            try store.write { tx in _ = try tx.delete(entity: "Person", id: 10) }

            #expect(throws: FeedstoreError.self) { try ShippedRecord(validating: FieldValue.string("not a record").storedEncoding) }
            #expect(throws: FeedstoreError.self) { try ShippedRecord(validating: [0xFF, 1, 2]) }

            #expect(throws: FeedstoreError.unknownEntity("Nobody", entities: ["Person"])) {
                try store.write { tx in try tx.put(entity: "Nobody", id: 1, stored: record) }
            }
            #expect { try store.write { tx in try tx.put(entity: "Person", id: "ten", stored: record) } } throws: { error in
                guard case FeedstoreError.invalidRange = error else { return false }
                return true
            }
            #expect(try store.read { try $0.count(entity: "Person") } == 1)
        }
    }
}
