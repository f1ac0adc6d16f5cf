import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// End-to-end runs of the built `storectl` binary's demo commands.
@Suite(.blocking) struct DemoCommandTests {
    @Test func demoRunPopulatesOnceAndPrintsTheFeed() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let first = try runTool(storectlURL, ["demo", "run", path, "--messages", "3000", "--contacts", "20"])
            #expect(first.status == 0, "\(first.stderr)")
            #expect(first.stdout.contains("Populating"))
            #expect(first.stdout.contains("messages: 3,000"))
            #expect(first.stdout.contains("Newest 10 messages in folder 1"))
            // The per-folder counts add up to all messages.
            let perFolder = first.stdout.split(separator: "\n").filter { $0.contains("folder ") && $0.contains(": ") }
                .compactMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: ",", with: "")) }
            #expect(perFolder.count == Int(DemoFeed.folders) && perFolder.reduce(0, +) == 3_000)
            let second = try runTool(storectlURL, ["demo", "run", path])
            #expect(second.status == 0 && !second.stdout.contains("Populating"))
            // A store holding fewer messages than asked for is written again (writes replace by id).
            let third = try runTool(storectlURL, ["demo", "run", path, "--messages", "4000", "--contacts", "20", "--commits", "1"])
            #expect(third.status == 0 && third.stdout.contains("Populating \(path) with 4,000 messages"))
        }
    }

    /// `demo scroll` populates a store, scrolls a lazy list of it while a writer commits, and
    /// prints its screens and a summary; the first row of each printed screen is the query's row.
    @Test func demoScrollScrollsTheWholeList() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let result = try runTool(storectlURL, ["demo", "scroll", path, "--messages", "20000", "--contacts", "20", "--screens", "120"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("Opened a lazy list of 20,000 messages in 8 sections") }, "\(result.stdout)")
            let summary = try #require(lines.last)
            #expect(summary.hasPrefix("120 screens of 20 rows over"), "\(summary)")
            let screens = lines.filter { $0.hasPrefix("screen ") }
            #expect(screens.count == 4, "\(result.stdout)")
            // No more rows decoded than the cache holds, however far the list was flung.
            for line in screens {
                let before = line.components(separatedBy: " rows decoded")[0]
                let count = before.split(separator: " ").last.flatMap { Int($0.replacingOccurrences(of: ",", with: "")) }
                #expect(count.map { $0 <= 1_250 } == true, "\(line)")
            }
        }
    }

    @Test func demoMutatePrintsEachCommittedSequence() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            #expect(try runTool(storectlURL, ["demo", "populate", path, "--messages", "500", "--contacts", "5"]).status == 0)
            let result = try runTool(storectlURL, ["demo", "mutate", path, "--commits", "25", "--per-commit", "2", "--seed", "9"])
            #expect(result.status == 0, "\(result.stderr)")
            let sequences = result.stdout.split(separator: "\n").compactMap { line -> UInt64? in
                line.hasPrefix("committed ") ? UInt64(line.dropFirst("committed ".count)) : nil
            }
            #expect(sequences.count > 15 && sequences == sequences.sorted())
            let store = try Store(path: path, options: StoreOptions(readOnly: true))
            let journal = try store.read { try $0.journal(after: 0, limit: 1_000) }
            #expect(Set(sequences).isSubset(of: Set(journal.map(\.sequence))))
            #expect(try store.verify().isEmpty)
        }
    }

    /// Small commits with a trimmed journal, each process closing cleanly, leave a data file that
    /// ends before free pages LMDB never wrote: every command opens it, and it takes writes.
    @Test func aStoreEndingBeforeUnwrittenFreePagesOpensEverywhere() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/t"
            let populate = try runTool(storectlURL, ["demo", "populate", path, "--messages", "200", "--contacts", "10"])
            #expect(populate.status == 0, "\(populate.stderr)")
            for seed in 1701...1708 {
                let mutate = try runTool(storectlURL, ["demo", "mutate", path, "--commits", "2", "--per-commit", "2", "--seed", String(seed),
                                                       "--keep-commits", "10", "--quiet"])
                #expect(mutate.status == 0, "seed \(seed): \(mutate.stderr)")
            }
            let inspect = try runTool(storectlURL, ["inspect", path, "--format", "json"])
            #expect(inspect.status == 0, "\(inspect.stderr)")
            // The state this test is about: the file is shorter than the pages counted in use.
            let environment = try #require(try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])["environment"]
                as? [String: Any]
            let fileSize = try #require(environment?["fileSize"] as? Int)
            let pagesUsed = try #require(environment?["pagesUsed"] as? Int), pageSize = try #require(environment?["pageSize"] as? Int)
            #expect(fileSize < pagesUsed * pageSize, "the file holds every page: the recipe no longer makes the state")
            let verify = try runTool(storectlURL, ["verify", path])
            #expect(verify.status == 0 && verify.stdout.contains("consistent"), "\(verify.stdout)\(verify.stderr)")
            let more = try runTool(storectlURL, ["demo", "mutate", path, "--commits", "3", "--per-commit", "3", "--seed", "1709", "--quiet"])
            #expect(more.status == 0, "\(more.stderr)")
            #expect(try runTool(storectlURL, ["verify", path]).status == 0)
        }
    }

    @Test func badArgumentsAndPathsFailWithAMessage() throws {
        try withTemporaryDirectory { dir in
            let bad = try runTool(storectlURL, ["demo", "mutate", dir + "/x", "--durability", "sometimes"])
            #expect(bad.status != 0 && bad.stderr.contains("--durability"))
            try Data("not a store".utf8).write(to: URL(fileURLWithPath: dir + "/file"))
            let notAStore = try runTool(storectlURL, ["demo", "run", dir + "/file"])
            #expect(notAStore.status != 0 && notAStore.stderr.contains("not a Feedstore store"))
        }
    }
}
