import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The demo inbox page in a real browser (headless chromium through WebDriver) while a writer
/// commits in another process: the rows in its DOM are the store's, at their positions, before
/// and after scrolling moves the window, and its counts are the store's. The long run scrolls a
/// million messages.
@Suite(.ownThreads) struct BrowserTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Interop/browser_inbox.py").path

    @Test func theInboxPageShowsTheStoreWhileAWriterCommits() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            let messages = TestSize.choose(quick: 20_000, long: 1_000_000)
            try populatedDemoStore(at: path, seed: 91, messages: messages, contacts: 50).close()
            let (server, port) = try ServeCommandTests.serve(path, ["--demo"])
            defer { server.interrupt(); _ = server.finish(timeout: 30) }
            let screenshot = ProcessInfo.processInfo.environment["FEEDSTORE_SCREENSHOT"] ?? dir + "/inbox.png"
            let position = messages * 5 / 8 + 17
            let browser = try RunningTool(URL(fileURLWithPath: "/usr/bin/env"),
                                          ["python3", Self.script, "http://127.0.0.1:\(port)/", String(position), screenshot])
            defer { if browser.isRunning { browser.kill() } }
            try #require(browser.waitFor("ready\n", timeout: 120), "\(browser.finish(timeout: 5))")
            try LiveServerTests.mutate(path, commits: 30, seed: 92)
            // What the page must come to show: the store after the writer.
            let store = try Store(path: path, options: StoreOptions(readOnly: true))
            defer { store.close() }
            let ids = try store.read { try $0.entries(entity: "Message", index: "byFolderDate").map(\.id) }
            let unread = try store.read { try $0.count(entity: "Message", index: "unreadByDate") }
            func text(_ count: Int, _ what: String) -> String { "\(count.formatted(.number.locale(Locale(identifier: "en_US")))) \(what)" }
            try FieldValue.object(["ids": .array(ids), "total": .string(text(ids.count, "messages")), "unread": .string(text(unread, "unread"))])
                .jsonText.write(toFile: screenshot + ".json", atomically: true, encoding: .utf8)
            FileManager.default.createFile(atPath: screenshot + ".go", contents: nil)
            let run = browser.finish(timeout: 300)
            try #require(run.status == 0, "browser: \(run.stderr.suffix(2000))")
            guard case let .object(report) = try FieldValue(jsonText: String(run.stdout.split(separator: "\n").last ?? "")) else {
                throw ConditionFailed(description: "no report: \(run.stdout)")
            }
            for view in ["top", "scrolled"] {
                guard case let .object(shown)? = report[view], case let .array(rows)? = shown["rows"] else {
                    throw ConditionFailed(description: "no \(view) rows")
                }
                #expect(rows.count >= 20, "\(view): a screenful of rows")
                for case let .object(row) in rows {
                    guard case let .int(position)? = row["position"], case let .int(id)? = row["id"] else { continue }
                    #expect(ids.indices.contains(Int(position)) && ids[Int(position)] == .uint(UInt64(id)),
                            "\(view): row \(position) shows message \(id), the store has \(ids.indices.contains(Int(position)) ? ids[Int(position)].jsonText : "none")")
                }
                let positions = rows.compactMap { if case let .object(row) = $0, case let .int(p)? = row["position"] { Int(p) } else { nil } }
                if view == "scrolled" { #expect(positions.contains(position), "scrolling moved the window to \(position)") }
                #expect(shown["total"] == .string(text(ids.count, "messages")))
                #expect(shown["unread"] == .string(text(unread, "unread")))
            }
            #expect(FileManager.default.fileExists(atPath: screenshot))
        }
    }
}
