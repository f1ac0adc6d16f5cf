import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// `storectl load` holds each line to what the entity's Swift type reads: the demo's `Message`
/// records, whose kinds the store learned when the demo's types opened it.
@Suite(.blocking) struct LoadCommandTests {
    private func record(_ id: Int, _ changes: [String: String] = [:]) -> String {
        var fields = ["id": "\(id)", "folder": "1", "date": "\"2026-01-01T09:30:00Z\"", "title": "\"hello\"", "isRead": "false",
                      "contactId": "2"]
        for (name, value) in changes { fields[name] = value }
        return "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ") + "}"
    }

    @Test func recordsTheTypeCannotReadAreRefusedWithTheirLine() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            try populatedDemoStore(at: path, seed: 3, messages: 50, contacts: 5).close()
            let cases: [(String, String)] = [
                (record(1001, ["folder": "\"abc\""]), #"Message 1001 was refused: field folder must hold an int, not a string ("abc")"#),
                (record(1002, ["date": "\"yesterday\""]), #"field date must hold a date, not a string ("yesterday")"#),
                (#"{"id": 1003, "folder": 1, "extra": {"a": 1}}"#, "field contactId (uint) is required and missing"),
                (record(1004, ["extra": "{\"a\": 1}"]), "field extra is not one the entity's type declares"),
            ]
            for (line, message) in cases {
                let file = dir + "/bad.jsonl"
                try (record(1000) + "\n" + line + "\n").write(toFile: file, atomically: true, encoding: .utf8)
                let load = try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", file])
                #expect(load.status == 2, "\(line)")
                #expect(load.stderr.contains("line 2 was refused") && load.stderr.contains(message), "\(load.stderr)")
            }
            // Nothing of the refused transactions was written.
            let count = try runTool(storectlURL, ["count", path, "--entity", "Message"])
            #expect(count.stdout.contains("50"), "\(count.stdout)")
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)

            // Undeclared fields are kept on request; standard input is "-".
            let kept = try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", "-", "--keep-undeclared-fields"],
                                   input: record(1004, ["extra": "{\"a\": 1}"]) + "\n" + record(1005) + "\n")
            #expect(kept.status == 0, "\(kept.stderr)")
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(readOnly: true))
            defer { store.close() }
            let loaded = try store.read { try $0.get(Message.self, id: 1004) }
            #expect(loaded?.title == "hello" && loaded?.date == ISO8601DateFormatter().date(from: "2026-01-01T09:30:00Z"))
            let raw = try store.read { try $0.record(entity: "Message", id: .uint(1004)) }
            #expect(raw?["extra"] == .object(["a": 1]))
            #expect(try store.read { try $0.count(Message.self) } == 52)
            // Kept on request, the field is part of the record: verify agrees.
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)
        }
    }

    @Test func linesThatAreNotRecordsSayWhyAndStopTheLoad() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            try populatedDemoStore(at: path, seed: 3, messages: 50, contacts: 5).close()
            let cases: [(String, String)] = [
                (#"{"id": 1001, "folder": "#, "is not valid JSON (the text ends where a value should be at byte 23)"),
                (record(1001) + " trailing", "is not valid JSON (text after the value at byte"),
                ("[1, 2]", #"is an array, not a record (a JSON object with an "id", or dump's {"id", "record"})"#),
                ("42", "is a number, not a record"),
                (#"{"title": "hello"}"#, #"has no "id""#),
                (#"{"record": {"title": "hello"}}"#, #"has a record but no "id""#),
            ]
            for (line, message) in cases {
                let load = try runTool(storectlURL, ["load", path, "--entity", "Message", "--input", "-"], input: record(1000) + "\n" + line + "\n")
                #expect(load.status == 2, "\(line)")
                #expect(load.stderr.contains("line 2 ") && load.stderr.contains(message), "\(line): \(load.stderr)")
            }
            // The line before the bad one was in the same transaction: nothing was written.
            let count = try runTool(storectlURL, ["count", path, "--entity", "Message"])
            #expect(count.stdout.contains("50"), "\(count.stdout)")
        }
    }
}
