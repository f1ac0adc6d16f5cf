import Feedstore
import FeedstoreDemo
@testable import FeedstoreLive
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Every frame a client can send is parsed or refused with a typed error naming what is wrong;
/// none crashes the parser or the session, and the session stays usable after each.
@Suite(.ownThreads) struct ClientFrameTests {
    @Test func framesParse() throws {
        #expect(try ClientFrame(text: #"{"type":"subscribe","id":"a","entity":"Message","index":"byContact","prefix":[7],"limit":50}"#)
            == .subscribe(id: "a", LiveQuery(entity: "Message", index: "byContact", prefix: [.int(7)], limit: 50)))
        #expect(try ClientFrame(text: #"{"type":"subscribe","id":3,"entity":"M","index":"i","from":["a"],"to":["b"],"reverse":true,"sectionBy":1,"offset":5,"limit":9,"fields":["t"],"mode":"indexes"}"#)
            == .subscribe(id: .int(3), LiveQuery(entity: "M", index: "i", from: ["a"], to: ["b"], reverse: true, sectionBy: 1, offset: 5,
                                                 limit: 9, fields: ["t"], mode: .indexes)))
        #expect(try ClientFrame(text: #"{"type":"subscribe","id":"s","entity":"Message","index":"byFolderDate","limit":50,"filter":{"and":[{"field":"title","contains":"rep","caseInsensitive":true},{"field":"folder","in":[1,2]}]}}"#)
            == .subscribe(id: "s", LiveQuery(entity: "Message", index: "byFolderDate", limit: 50,
                                             filter: .field("title").contains("rep", caseInsensitive: true) && .field("folder").isIn([1, 2]))))
        #expect(try ClientFrame(text: #"{"type":"setWindow","id":"a","offset":100,"limit":50}"#) == .setWindow(id: "a", offset: 100, limit: 50))
        #expect(try ClientFrame(text: #"{"type":"rows","id":"a","offset":0,"limit":10}"#) == .rows(id: "a", offset: 0, limit: 10))
        #expect(try ClientFrame(text: #"{"type":"unsubscribe","id":"a"}"#) == .unsubscribe(id: "a"))
        #expect(try ClientFrame(text: #"{"type":"resume","session":"t","subscriptions":[{"id":"a","entity":"M","index":"i","limit":5,"applied":12},{"id":2,"entity":"M","index":"j","mode":"indexes","applied":null}]}"#)
            == .resume(session: "t", [.init(id: "a", query: LiveQuery(entity: "M", index: "i", limit: 5), applied: 12),
                                      .init(id: .int(2), query: LiveQuery(entity: "M", index: "j", mode: .indexes), applied: nil)]))
    }

    static let refusals: [(frame: String, code: LiveError.Code, says: String)] = [
        ("", .malformed, "not JSON"),
        ("{", .malformed, "not JSON"),
        ("[1,2]", .malformed, "not a JSON object"),
        (#"{"id":"a"}"#, .malformed, "type must be given"),
        (#"{"type":7}"#, .malformed, "type must be a string"),
        (#"{"type":"subscribe!"}"#, .unknownType, "\"subscribe!\" is not a frame type"),
        (#"{"type":"subscribe","entity":"M","index":"i"}"#, .malformed, "id must be given"),
        (#"{"type":"subscribe","id":"","entity":"M","index":"i"}"#, .malformed, "id must be a string of 1 to 64 bytes"),
        (#"{"type":"subscribe","id":[1],"entity":"M","index":"i"}"#, .malformed, "id must be"),
        (#"{"type":"subscribe","id":"a","index":"i"}"#, .malformed, "entity must be given"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","prefix":7}"#, .malformed, "prefix must be an array"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","limit":-1}"#, .malformed, "limit must be a whole number"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","limit":1.5}"#, .malformed, "limit must be a whole number"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","limit":99999999999}"#, .malformed, "limit must be a whole number"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","reverse":"yes"}"#, .malformed, "reverse must be true or false"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","mode":"rows"}"#, .malformed, "mode is \"rows\""),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","fields":[1]}"#, .malformed, "fields must be an array of field names"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","where":{}}"#, .malformed, "\"where\" is not a member"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","filter":[1]}"#, .malformed, "filter: not a filter condition: expected an object"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","filter":{"field":"t"}}"#, .malformed, "field t needs exactly one test"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","filter":{"field":"t","==":1,"<":2}}"#, .malformed, "got <, =="),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","filter":{"field":"t","contains":3}}"#, .malformed, "takes a string"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","filter":{"field":"t","contains":"x","exact":true}}"#, .malformed, "\"exact\" is not part of the test"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","filter":{"and":[]}}"#, .malformed, "non-empty array"),
        (#"{"type":"subscribe","id":"a","entity":"M","index":"i","filter":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"not":{"field":"t","isNull":true}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}"#, .malformed, "deeper than 32"),
        (#"{"type":"setWindow","id":"a","offset":1}"#, .malformed, "limit must be given"),
        (#"{"type":"unsubscribe","id":"a","offset":1}"#, .malformed, "\"offset\" is not a member"),
        (#"{"type":"resume","subscriptions":[]}"#, .malformed, "session must be given"),
        (#"{"type":"resume","session":"t"}"#, .malformed, "subscriptions must be given"),
        (#"{"type":"resume","session":"t","subscriptions":[7]}"#, .malformed, "each of subscriptions must be an object"),
        (#"{"type":"resume","session":"t","subscriptions":[{"id":"a","entity":"M","index":"i","applied":-3}]}"#, .malformed, "applied must be a commit sequence"),
        (#"{"type":"resume","session":"t","subscriptions":[{"id":"a","entity":"M","index":"i","type":"x"}]}"#, .malformed, "\"type\" is not a member"),
    ]

    @Test func malformedFramesAreRefusedNamingWhatIsWrong() {
        for (frame, code, says) in Self.refusals {
            #expect("\(frame)") { try ClientFrame(text: frame) } throws: { error in
                guard let error = error as? LiveError else { return false }
                return error.code == code && error.message.contains(says)
            }
        }
    }

    /// Random mutations of valid frames, and random bytes: the parser answers each with a frame
    /// or a `LiveError`, and the session with an `error` frame at most, and stays usable.
    @Test func fuzzedFramesNeverCrashTheParserOrTheSession() async throws {
        let seed = UInt64.random(in: 0 ... 1_000_000)
        var random = SeededGenerator(seed: seed)
        let valid = [
            #"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","prefix":[1],"sectionBy":1,"offset":0,"limit":20}"#,
            #"{"type":"subscribe","id":7,"entity":"Message","index":"unreadByDate","mode":"indexes"}"#,
            #"{"type":"subscribe","id":"f","entity":"Message","index":"byFolderDate","limit":20,"filter":{"or":[{"field":"title","hasPrefix":"re","caseInsensitive":true},{"not":{"field":"isRead","==":true}},{"field":"contactId","in":[1,2]}]}}"#,
            #"{"type":"setWindow","id":"a","offset":10,"limit":20}"#,
            #"{"type":"rows","id":7,"offset":0,"limit":5}"#,
            #"{"type":"unsubscribe","id":"a"}"#,
            #"{"type":"resume","session":"0123","subscriptions":[{"id":"a","entity":"Message","index":"byFolderDate","limit":20,"applied":3}]}"#,
        ]
        let alphabet = Array(#"{}[]":,0123456789-.eE truefalsnul\"#.utf8) + [0, 0xFF, 0xC3, 0x80, 0x0A]
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            defer { store.close() }
            var feed = DemoFeed(seed: 3)
            try feed.populate(store, messages: 100, contacts: 5)
            try await LiveSessionTests.withSession(LiveSession(store: store, limits: LiveLimits(windowMovesPerSecond: 1_000_000))) { session in
            var sent = 0
            for round in 0..<3_000 {
                var bytes = Array(valid[Int.random(in: 0..<valid.count, using: &random)].utf8)
                switch round % 4 {
                case 0: bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in alphabet.randomElement(using: &random)! }
                default:
                    for _ in 0..<Int.random(in: 1...4, using: &random) {
                        let at = Int.random(in: 0...bytes.count, using: &random)
                        switch Int.random(in: 0..<3, using: &random) {
                        case 0 where at < bytes.count: bytes.remove(at: at)
                        case 1: bytes.insert(alphabet.randomElement(using: &random)!, at: at)
                        default: if at < bytes.count { bytes[at] = alphabet.randomElement(using: &random)! }
                        }
                    }
                }
                let text = String(decoding: bytes, as: UTF8.self)
                do throws(LiveError) {
                    _ = try ClientFrame(text: text)
                } catch {
                    #expect(!error.message.isEmpty, "seed \(seed): \(text)")
                }
                await session.receive(text)
                sent += 1
            }
            // The session still serves a well-formed subscription.
            await session.receive(#"{"type":"subscribe","id":"last","entity":"Message","index":"byFolderDate","limit":5}"#)
            var sawLast = false
            for _ in 0..<(sent * 2 + 10) {
                let frame = try await LiveSessionTests.next(session)
                if frame["id"] == "last", frame["type"] == "batch" {
                    sawLast = true
                    break
                }
            }
            #expect(sawLast, "seed \(seed)")
            }
        }
    }

    @Test func sessionRefusalsAreErrorFramesAndTheConnectionStaysOpen() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            defer { store.close() }
            var feed = DemoFeed(seed: 4)
            try feed.populate(store, messages: 50, contacts: 5)
            let limits = LiveLimits(subscriptions: 2, windowRows: 100, frameBytes: 400, windowMovesPerSecond: 2, filterTests: 2)
            try await LiveSessionTests.withSession(LiveSession(store: store, limits: limits) { query in
                query.index != "byContact" || query.prefix == [.uint(3)]
            }) { session in
            let cases: [(frame: String, code: LiveError.Code, says: String)] = [
                (#"{"type":"subscribe","id":"a","entity":"Nope","index":"x","limit":5}"#, .unknownEntity, "no entity named Nope; the entities are Contact, Message"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"x","limit":5}"#, .unknownIndex, "its indexes are byFolderDate, unreadByDate, byContact, id"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","fields":["nope"],"limit":5}"#, .unknownField, "no field named nope"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","prefix":["inbox"],"limit":5}"#, .invalidRange, "inbox"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","sectionBy":3,"limit":5}"#, .malformed, "sectionBy is 3"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate"}"#, .limitExceeded, "needs a limit of at most 100"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","limit":101}"#, .limitExceeded, "at most 100"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byContact","prefix":[4],"limit":5}"#, .refused, "may not watch Message.byContact"),
                // A filter narrows what the authorizer admitted, never widens it; and a refused
                // principal learns nothing of the fields it names.
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byContact","limit":5,"filter":{"field":"contactId","==":3}}"#, .refused, "may not watch"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byContact","prefix":[4],"limit":5,"filter":{"field":"nope","==":3}}"#, .refused, "may not watch"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","limit":5,"filter":{"field":"subject","contains":"x"}}"#, .unknownField, "no field named subject"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","limit":5,"filter":{"field":"folder","contains":"1"}}"#, .invalidFilter, "folder is stored as int"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","limit":5,"filter":{"field":"folder","==":"inbox"}}"#, .invalidFilter, "does not convert"),
                (#"{"type":"subscribe","id":"a","entity":"Message","index":"byFolderDate","limit":5,"filter":{"or":[{"field":"folder","==":1},{"field":"folder","==":2},{"field":"folder","==":3}]}}"#, .limitExceeded, "at most 2 field tests"),
                (#"{"type":"setWindow","id":"zz","offset":0,"limit":5}"#, .unknownSubscription, "no subscription \"zz\""),
                ("{" + String(repeating: " ", count: 500) + "}", .limitExceeded, "at most 400"),
            ]
            for (frame, code, says) in cases {
                await session.receive(frame)
                let reply = try await LiveSessionTests.next(session)
                #expect(reply["type"] == "error" && reply["code"] == .string(code.rawValue), "\(frame): \(FieldValue.object(reply).jsonText)")
                if case let .string(message) = reply["message"] { #expect(message.contains(says), "\(message)") }
            }
            #expect(await session.subscriptionIDs.isEmpty, "nothing refused was opened")
            // An admitted prefix opens; a refused one sent no row.
            await session.receive(#"{"type":"subscribe","id":"mine","entity":"Message","index":"byContact","prefix":[3],"limit":50}"#)
            let batch = try await LiveSessionTests.next(session)
            #expect(batch["type"] == "batch" && batch["id"] == "mine" && batch["initial"] == true)
            if case let .array(inserts) = batch["inserts"] {
                #expect(inserts.allSatisfy { if case let .object(row) = $0, case let .object(record) = row["record"] { record["contactId"] == .int(3) } else { false } },
                        "\(FieldValue.object(batch).jsonText.prefix(600))")
            }
            await session.receive(#"{"type":"subscribe","id":"mine","entity":"Message","index":"byFolderDate","limit":5}"#)
            #expect(try await LiveSessionTests.next(session)["code"] == .string("duplicateSubscription"))
            // A filter inside the admitted prefix: only its rows, and only those that pass.
            await session.receive(#"{"type":"subscribe","id":"unread","entity":"Message","index":"byContact","prefix":[3],"limit":50,"filter":{"field":"isRead","==":false}}"#)
            let filtered = try await LiveSessionTests.next(session)
            #expect(filtered["type"] == "batch" && filtered["id"] == "unread")
            let want = try await store.read { try $0.entries(entity: "Message", index: "byContact", range: .prefix(3), filter: .field("isRead") == false) }
            if case let .array(inserts) = filtered["inserts"] {
                let ids = inserts.compactMap { row -> FieldValue? in if case let .object(r) = row { r["id"] } else { nil } }
                #expect(ids.map(\.jsonText) == want.map(\.id.jsonText), "\(FieldValue.object(filtered).jsonText.prefix(600))")
                #expect(!ids.isEmpty)
            } else {
                Issue.record("no inserts: \(filtered)")
            }
            await session.receive(#"{"type":"unsubscribe","id":"unread"}"#)
            await session.receive(#"{"type":"rows","id":"mine","offset":0,"limit":5}"#)
            #expect(try await LiveSessionTests.next(session)["code"] == .string("wrongMode"))
            await session.receive(#"{"type":"subscribe","id":"b","entity":"Message","index":"byFolderDate","limit":5}"#)
            _ = try await LiveSessionTests.next(session)
            await session.receive(#"{"type":"subscribe","id":"c","entity":"Message","index":"byFolderDate","limit":5}"#)
            #expect(try await LiveSessionTests.next(session)["code"] == .string("limitExceeded"))
            // Window moves beyond the rate are refused (two a second; the rows request above
            // took one): errors go out before batches.
            for _ in 0..<3 {
                await session.receive(#"{"type":"setWindow","id":"b","offset":1,"limit":5}"#)
            }
            #expect(try await LiveSessionTests.next(session)["code"] == .string("rateLimited"))
            await session.receive(#"{"type":"unsubscribe","id":"b"}"#)
            #expect(await session.subscriptionIDs == ["mine"])
            }
        }
    }
}
