@_spi(Replication) import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Forwarded write requests and replies read back exactly as sent, every kind of value and
/// precondition included; bytes that are not one are refused with a typed error, never read
/// halfway.
@Suite(.blocking) struct WriteMessageTests {
    static func randomValue(_ rng: inout SeededGenerator, depth: Int = 0) -> FieldValue {
        switch Int.random(in: 0..<(depth < 2 ? 11 : 9), using: &rng) {
        case 0: .null
        case 1: .bool(Bool.random(using: &rng))
        case 2: .int(Int64.random(in: .min ... .max, using: &rng))
        case 3: .uint(UInt64.random(in: 0 ... .max, using: &rng))
        case 4: .double(Double.random(in: -1e12...1e12, using: &rng))
        case 5: .date(Date(timeIntervalSince1970: Double(Int64.random(in: 0...4_000_000_000_000, using: &rng)) / 1_000_003))
        case 6: .string(String((0..<Int.random(in: 0...12, using: &rng)).map { _ in "aé\"\\{[ 😀x".randomElement(using: &rng)! }))
        case 7: .bytes((0..<Int.random(in: 0...9, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 8: .uuid(UUID())
        case 9: .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in randomValue(&rng, depth: depth + 1) })
        default: .object(randomFields(&rng, depth: depth + 1))
        }
    }

    static func randomFields(_ rng: inout SeededGenerator, depth: Int = 0) -> [String: FieldValue] {
        Dictionary((0..<Int.random(in: 0...4, using: &rng)).map { ("f\($0)", randomValue(&rng, depth: depth)) }, uniquingKeysWith: { a, _ in a })
    }

    @Test(arguments: testSeeds(3, base: 121))
    func requestsAndRepliesReadBackExactly(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let writes = (0..<Int.random(in: 0...4, using: &rng)).map { _ -> RecordWrite in
                let action: RecordWrite.Action = [.insert(fields: Self.randomFields(&rng)), .put(fields: Self.randomFields(&rng)), .delete].randomElement(using: &rng)!
                let precondition: RecordWrite.Precondition? = [nil, .absent, .equals(Self.randomFields(&rng))].randomElement(using: &rng)!
                return RecordWrite(entity: "E\(Int.random(in: 0...3, using: &rng))", id: Self.randomValue(&rng), action: action, precondition: precondition)
            }
            let request = WriteMessages.Request(id: "request \(Int.random(in: 0...1_000_000, using: &rng)) é", writes: writes,
                                                answeredByStream: Bool.random(using: &rng))
            #expect(try WriteMessages.decodeRequest(WriteMessages.encode(request)) == request, "seed \(seed)")
        }
        let replies: [WriteMessages.Reply] = [
            .applied(sequence: 0, repeated: false), .applied(sequence: .max, repeated: true),
            .notApplied(reason: "another store was promoted", retry: true), .notApplied(reason: "", retry: false),
            .refused(.uniqueViolation(entity: "Item", index: "byName", key: [.string("a"), .int(-1)], existingID: .uuid(UUID()))),
            .refused(.recordRefused(entity: "Item", id: .int(3), field: "score", reason: .wrongKind(expected: "double", value: .string("x")))),
            .refused(.preconditionFailed(entity: "Item", id: .date(Date(timeIntervalSince1970: 1.5)), reason: "the record exists")),
        ]
        for reply in replies { #expect(try WriteMessages.decodeReply(WriteMessages.encode(reply)) == reply) }
    }

    /// A request cut short, with a byte changed, or of the wrong shape throws, whatever the cut.
    @Test func malformedMessagesAreRefused() throws {
        let request = WriteMessages.encode(WriteMessages.Request(id: "r", writes: [.insert(entity: "Item", id: .int(1), fields: ["name": .string("a")])]))
        for cut in 0..<request.count {
            #expect(throws: (any Error).self, "cut at \(cut)") { _ = try WriteMessages.decodeRequest(Array(request.prefix(cut))) }
        }
        let shapes: [FieldValue] = [.string("r"), .object(["id": .string("r")]), .object(["id": .int(1), "writes": .array([])]),
                                    .object(["id": .string("r"), "writes": .array([.object(["entity": .string("Item"), "id": .int(1), "action": .string("upsert")])])]),
                                    .object(["id": .string("r"), "writes": .array([.object(["entity": .string("Item"), "id": .int(1), "action": .string("put")])])])]
        for shape in shapes {
            #expect(throws: WriteMessages.Malformed.self, "\(shape)") { _ = try WriteMessages.decodeRequest(shape.storedEncoding) }
        }
        #expect(throws: (any Error).self) { _ = try WriteMessages.decodeRequest(Array("{\"id\":\"r\",\"writes\":[]}".utf8)) }
        #expect(throws: WriteMessages.Malformed.self) { _ = try WriteMessages.decodeReply(FieldValue.object([:]).storedEncoding) }
    }

    /// Default request ids are version 7 UUIDs: the time they were made leads, so later ids sort
    /// after earlier ones (and the primary files them together).
    @Test func defaultRequestIDsAreTimeOrderedUUIDs() throws {
        var previous = ReplicaWriter.newRequestID()
        for _ in 0..<5 {
            Thread.sleep(forTimeInterval: 0.002)
            let id = ReplicaWriter.newRequestID()
            let bytes = withUnsafeBytes(of: try #require(UUID(uuidString: id), "\(id) is a UUID").uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 7 && bytes[8] >> 6 == 0b10, "\(id): version 7, the RFC's variant")
            #expect(previous < id, "\(previous) then \(id)")
            let milliseconds = bytes[0..<6].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            #expect(abs(Double(milliseconds) - Date().timeIntervalSince1970 * 1_000) < 1_000, "\(id) holds the time")
            previous = id
        }
    }
}
