@_spi(Replication) import Feedstore
import FeedstoreDemo
@testable import FeedstoreJetStream
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Envelopes read back as written: the reader that skips what a replica does not use gives the
/// same entries and commit for compact text, for the same JSON laid out with white space and
/// escapes, and, without `stored`, from `after`.
@Suite(.blocking) struct ChangeEnvelopeTests {
    @Test(arguments: testSeeds(2, base: 91))
    func envelopesReadBackWhateverTheirLayout(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let store = try ShipperTests.openStore(dir + "/store")
            defer { store.close() }
            _ = try store.write { try $0.keepRecordImagesInJournal() }
            try ShipperTests.commit(store, 40, rng: &rng)
            // A name that JSON must escape, inside a record and beside brackets.
            try store.write { try $0.put(Item(id: 500, group: 1, score: 1, name: "a \"quoted\" {name} [x] \\ é", flag: true, tag: nil)) }
            let commits = try store.read { try $0.journal(after: 0, limit: 1_000) }.filter { $0.entries.allSatisfy { $0.kind == .delete || $0.record != nil } }
            let origin = UUID()
            for commit in commits {
                let compact = try ChangeEnvelope.encode(commit, store: origin, requests: [AppliedRequest(id: "r \"1\"", sequence: commit.sequence, time: Date(timeIntervalSince1970: 1_000))])
                let read = try ChangeEnvelope.decode(compact, streamSequence: 1)
                #expect(read.sequence == commit.sequence && read.entries.count == commit.entries.count, "seed \(seed)")
                #expect(read.entries.map(\.entity) == commit.entries.map(\.entity) && read.entries.map(\.id.jsonText) == commit.entries.map(\.id.jsonText), "ids as JSON writes them, seed \(seed)")
                #expect(read.entries.map { $0.after } == commit.entries.map { $0.record }, "the exact records, seed \(seed)")
                #expect(read.requests.map(\.id) == ["r \"1\""])

                // Compact and canonical (members in UTF-8 order, as the tree read back writes
                // itself), and each entry's index keys and changed fields as the journal has them.
                let tree = try FieldValue(jsonText: String(decoding: compact, as: UTF8.self))
                #expect(tree.jsonBytes == compact, "seed \(seed)")
                guard case let .object(top) = tree, case let .array(written)? = top["entries"], written.count == commit.entries.count else {
                    Issue.record("no entries, seed \(seed)")
                    continue
                }
                for (entry, item) in zip(commit.entries, written) {
                    guard case let .object(fields) = item, case let .object(keys)? = fields["indexKeys"] else {
                        Issue.record("an entry without index keys, seed \(seed)")
                        continue
                    }
                    #expect(fields["changedFields"] == .array(entry.changedFields.map(FieldValue.string)), "seed \(seed)")
                    #expect(fields["op"] == .string(entry.kind == .insert ? "c" : entry.kind == .update ? "u" : "d"), "seed \(seed)")
                    #expect(Set(keys.keys) == Set(entry.indexChanges.map(\.index)), "seed \(seed)")
                    for change in entry.indexChanges {
                        let expected = FieldValue.object(["before": try change.before.map { .array(try $0.components()) } ?? .null,
                                                          "after": try change.after.map { .array(try $0.components()) } ?? .null])
                        #expect(keys[change.index]?.jsonText == expected.jsonText, "seed \(seed)")
                    }
                }

                // The same JSON laid out otherwise (white space, escaped slashes) reads the same.
                let object = try JSONSerialization.jsonObject(with: Data(compact))
                let spread = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted])
                let reread = try ChangeEnvelope.decode(Array(spread), streamSequence: 1)
                #expect(reread.commit == read.commit && reread.requests.map(\.id) == read.requests.map(\.id), "seed \(seed)")

                // Without `stored`, the records come from `after`.
                guard var top = object as? [String: Any], var entries = top["entries"] as? [[String: Any]] else {
                    Issue.record("not an object")
                    continue
                }
                for i in entries.indices { entries[i]["stored"] = NSNull() }
                top["entries"] = entries
                let fromJSON = try ChangeEnvelope.decode(Array(try JSONSerialization.data(withJSONObject: top)), streamSequence: 1)
                #expect(fromJSON.entries.allSatisfy { !$0.exact })
                #expect(fromJSON.entries.map { $0.after?["name"] } == read.entries.map { $0.after?["name"] }, "seed \(seed)")
            }
        }
    }

    /// Text that is not an envelope is refused with the message's sequence, never read halfway.
    @Test func malformedEnvelopesAreRefused() {
        // An envelope around one entry: the entry's faults are refused too.
        func around(_ entry: String) -> String {
            "{\"entries\": [\(entry)], \"source\": {\"store\": \"s\", \"sequence\": 1}, \"v\": 1}"
        }
        let stringValue = Data(FieldValue.string("not a record").storedEncoding).base64EncodedString()
        for text in ["", "{", "[]", "{\"v\": 1}", around("{\"entity\": \"Item\"}"),
                     "{\"entries\": [], \"source\": {\"store\": \"s\", \"sequence\": 1}, \"v\": 2}", "{\"entries\": [\"unterminated], \"v\": 1}",
                     around("1"), around("{\"entity\": \"Item\", \"id\": 1, \"op\": \"c\"}"),
                     around("{\"entity\": \"Item\", \"id\": 1, \"op\": \"c\", \"stored\": \"@@@@\"}"),
                     around("{\"entity\": \"Item\", \"id\": 1, \"op\": \"c\", \"stored\": \"QQ==QQ==\"}"),
                     around("{\"entity\": \"Item\", \"id\": 1, \"op\": \"c\", \"stored\": \"\(stringValue)\"}"),
                     around("{\"entity\": \"Item\", \"id\": 1, \"op\": \"c\", \"after\": [1]}")] {
            #expect(throws: JetStreamError.self, "\(text)") { _ = try ChangeEnvelope.decode(Array(text.utf8), streamSequence: 7) }
        }
    }

    /// The base64 a shipper writes and a replica reads straight from an envelope's bytes is
    /// Foundation's, for every length and padding, and nothing is read from text that is not
    /// base64.
    @Test(arguments: testSeeds(2, base: 17))
    func base64WrittenAndReadInTheBytesMatchesFoundation(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for length in 0..<64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            var written: [UInt8] = []
            Base64.append(bytes, to: &written)
            #expect(written == Array(Data(bytes).base64EncodedString().utf8), "length \(length), seed \(seed)")
            let text = Array(("\"" + Data(bytes).base64EncodedString() + "\"").utf8)
            #expect(JSONScanner(text).base64(in: 0..<text.count) == bytes, "length \(length), seed \(seed)")
        }
        for bad in ["\"A\"", "\"AB=A\"", "\"A===\"", "\"QQ==QQ==\"", "\"QQ\\/=\"", "\"Q Q=\"", "\"QQ=\""] {
            let text = Array(bad.utf8)
            #expect(JSONScanner(text).base64(in: 0..<text.count) == nil, "\(bad)")
        }
    }
}
