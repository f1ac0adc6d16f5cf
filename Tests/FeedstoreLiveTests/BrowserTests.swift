import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The demo inbox page in a real browser (headless chromium through WebDriver) while a writer
/// commits in another process: the rows in its DOM are the store's, at their positions, with
/// their senders' names, before and after scrolling moves the window and at the very end of the
/// list; its counts are the store's; the folder of the first row stays at the top; and the scroll
/// area stays within what a browser can hold. The long run scrolls ten million messages end to end.
@Suite(.ownThreads) struct BrowserTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/browser_inbox.py").path
    static let searchScript = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/browser_search.py").path
    /// Chromium's cap on an element's height.
    static let browserHeightLimit = 33_554_428

    @Test func theInboxPageShowsTheStoreWhileAWriterCommits() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            let messages = TestSize.choose(quick: 20_000, long: 10_000_000)
            try populatedDemoStore(at: path, seed: 91, messages: messages, contacts: 50).close()
            let (server, port) = try ServeCommandTests.serve(path, ["--demo"])
            defer { server.interrupt(); _ = server.finish(timeout: 30) }
            let screenshot = ProcessInfo.processInfo.environment["FEEDSTORE_SCREENSHOT"] ?? dir + "/inbox.png"
            let position = messages * 5 / 8 + 17
            let browser = try RunningTool(URL(fileURLWithPath: "/usr/bin/env"),
                                          ["python3", Self.script, "http://127.0.0.1:\(port)/", String(position), screenshot])
            defer { if browser.isRunning { browser.kill() } }
            try #require(browser.waitFor("ready\n", timeout: 180), "\(browser.finish(timeout: 5))")
            try LiveServerTests.mutate(path, commits: 30, seed: 92)
            // What the page must come to show: the store after the writer, at the positions the
            // checks look at (the top, around the scrolled position, the end).
            let store = try Store(path: path, options: StoreOptions(readOnly: true))
            defer { store.close() }
            let count = try store.read { try $0.count(entity: "Message") }
            var ids: [String: FieldValue] = [:]
            for start in [0, position - 100, count - 200] {
                let entries = try store.read { try $0.entries(entity: "Message", index: "byFolderDate", offset: max(0, start), limit: 300) }
                for (i, entry) in entries.enumerated() { ids[String(max(0, start) + i)] = entry.id }
            }
            let unread = try store.read { try $0.count(entity: "Message", index: "unreadByDate") }
            func text(_ count: Int, _ what: String) -> String { "\(count.formatted(.number.locale(Locale(identifier: "en_US")))) \(what)" }
            try FieldValue.object(["ids": .object(ids), "count": .int(Int64(count)), "total": .string(text(count, "messages")),
                                   "unread": .string(text(unread, "unread"))])
                .jsonText.write(toFile: screenshot + ".json", atomically: true, encoding: .utf8)
            FileManager.default.createFile(atPath: screenshot + ".go", contents: nil)
            let run = browser.finish(timeout: 600)
            try #require(run.status == 0, "browser: \(run.stderr.suffix(2000))")
            guard case let .object(report) = try FieldValue(jsonText: String(run.stdout.split(separator: "\n").last ?? "")) else {
                throw ConditionFailed(description: "no report: \(run.stdout)")
            }
            if case let .int(placeholders)? = report["placeholdersAfterJump"] {
                #expect(placeholders > 0, "a jump far down the list draws placeholders until the window brings the rows")
            } else {
                Issue.record("no placeholder count: \(report)")
            }
            let now = Date()
            for view in ["top", "scrolled", "end"] {
                guard case let .object(shown)? = report[view], case let .array(rows)? = shown["rows"] else {
                    throw ConditionFailed(description: "no \(view) rows")
                }
                #expect(rows.count >= 20, "\(view): a screenful of rows")
                var positions: [Int] = []
                for case let .object(row) in rows {
                    guard case let .int(position)? = row["position"], case let .int(id)? = row["id"] else { continue }
                    positions.append(Int(position))
                    if let want = ids[String(position)] {
                        #expect(want == .uint(UInt64(id)), "\(view): row \(position) shows message \(id), the store has \(want.jsonText)")
                    }
                    let message = try store.read { try $0.get(Message.self, id: UInt64(id)) }
                    let sender = try message.flatMap { m in try store.read { try $0.get(Contact.self, id: m.contactId) } }
                    #expect(row["sender"] == sender.map { .string($0.name) }, "\(view): message \(id)'s sender")
                    if case let .string(date)? = row["date"], let shownDate = ISO8601DateFormatter().date(from: date.replacingOccurrences(of: " ", with: "T") + ":00Z") {
                        #expect(shownDate < now, "\(view): message \(id) is dated \(date), after today")
                    } else {
                        Issue.record("\(view): message \(id) shows no date: \(row)")
                    }
                }
                if view == "scrolled" { #expect(positions.contains(position), "scrolling moved the window to \(position)") }
                if view == "end" { #expect(positions.contains(count - 1), "the last row is in the DOM at the end of the list") }
                if view != "top", let first = positions.min(), case let .string(header)? = shown["sticky"] {
                    let folder = try store.read { try $0.entries(entity: "Message", index: "byFolderDate", offset: first, limit: 1) }.first?.key.first
                    #expect(folder.map { header.hasPrefix("Folder \($0.jsonText) ") } == true, "\(view): the header on top says \(header)")
                }
                if case let .int(height)? = shown["scrollHeight"] {
                    #expect(height > 0 && height < Self.browserHeightLimit, "\(view): a scroll area of \(height) px")
                }
                #expect(shown["total"] == .string(text(count, "messages")))
                #expect(shown["unread"] == .string(text(unread, "unread")))
            }
            #expect(FileManager.default.fileExists(atPath: screenshot))
        }
    }

    /// The search box, typed into key by key: the list shows the messages whose title contains
    /// the text (ignoring case and diacritics), at the positions the store's filtered query gives
    /// them, with their count; and a message saved afterwards by another process that matches
    /// enters the live list at the top.
    @Test func theSearchBoxFiltersTheLiveList() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            try populatedDemoStore(at: path, seed: 93, messages: 5_000, contacts: 50).close()
            let (server, port) = try ServeCommandTests.serve(path, ["--demo"])
            defer { server.interrupt(); _ = server.finish(timeout: 30) }
            let state = dir + "/search"
            let browser = try RunningTool(URL(fileURLWithPath: "/usr/bin/env"),
                                          ["python3", Self.searchScript, "http://127.0.0.1:\(port)/", "REP", state])
            defer { if browser.isRunning { browser.kill() } }
            try #require(browser.waitFor("searched\n", timeout: 180), "\(browser.finish(timeout: 5))")
            let search = Query(Message.byFolderDate).filter(.field("title").contains("REP", caseInsensitive: true, diacriticInsensitive: true))
            let writer = try Store(path: path, entities: DemoFeed.entities)
            defer { writer.close() }
            let (count, expected) = try await writer.read { tx in (try tx.count(search), try tx.objects(in: search, limit: 200).map(\.id)) }
            #expect(count > 0 && count < 5_000)
            func report(_ line: Int) throws -> (rows: [(position: Int, id: UInt64)], total: String) {
                let lines = browser.lines.filter { $0.hasPrefix("{") }
                guard lines.count > line, case let .object(view) = try FieldValue(jsonText: lines[line]),
                      case let .array(rows)? = view["rows"], case let .string(total)? = view["total"] else {
                    throw ConditionFailed(description: "no report \(line): \(browser.lines)")
                }
                return (rows.compactMap { row in
                    guard case let .object(r) = row, case let .int(position)? = r["position"], case let .int(id)? = r["id"] else { return nil }
                    return (Int(position), UInt64(id))
                }, total)
            }
            let searched = try report(0)
            #expect(searched.total == "\(count.formatted(.number.locale(Locale(identifier: "en_US")))) found")
            #expect(searched.rows.count >= 10, "a screenful of matches")
            for row in searched.rows where row.position < expected.count {
                #expect(expected[row.position] == row.id, "search row \(row.position) shows message \(row.id)")
            }
            // Another process saves a message that matches, newest in the first folder: it enters at the top.
            let saved = Message(id: 9_000_001, folder: 0, date: .now.addingTimeInterval(86_400 * 365 * 20), title: "Repairs for the office",
                                isRead: false, contactId: 1)
            var edited = saved
            edited.title = "Repairs for the office, done"
            let message = edited
            try await writer.write { tx in try tx.put(saved) }
            try await writer.write { tx in try tx.put(message) }
            try FieldValue.object(["first": .uint(message.id)]).jsonText.write(toFile: state + ".json", atomically: true, encoding: .utf8)
            FileManager.default.createFile(atPath: state + ".go", contents: nil)
            let run = browser.finish(timeout: 300)
            try #require(run.status == 0, "browser: \(run.stderr.suffix(2000))")
            let entered = try report(1)
            #expect(entered.rows.first { $0.position == 0 }?.id == message.id)
            #expect(entered.total == "\((count + 1).formatted(.number.locale(Locale(identifier: "en_US")))) found")
        }
    }
}
