@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A suspended store holds no lock on its files (what iOS requires of a suspended app whose store
/// is in an app group's container), other processes commit meanwhile, and after the resume every
/// watcher, in every configuration and mode, shows what a fresh query does.
@Suite(.blocking) struct SuspensionTests {
    /// The locks this process holds on files under `directory`, as `/proc/locks` lists them
    /// ("1: POSIX  ADVISORY  READ 4242 08:01:1234 0 0"; "2: FLOCK  ADVISORY  WRITE 4242 00:2b:99 0 EOF").
    static func locksHeld(under directory: String) throws -> [(file: String, line: String)] {
        var files: [UInt64: String] = [:]
        for name in try FileManager.default.subpathsOfDirectory(atPath: directory) {
            var info = stat()
            if stat(directory + "/" + name, &info) == 0 { files[UInt64(info.st_ino)] = name }
        }
        let pid = String(getpid())
        return try String(contentsOfFile: "/proc/locks", encoding: .utf8).split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let at = words.firstIndex(where: { $0 == "READ" || $0 == "WRITE" }), words.count > at + 2, words[at + 1] == pid,
                  let inode = words[at + 2].split(separator: ":").last.flatMap({ UInt64($0) }), let file = files[inode] else { return nil }
            return (file, String(line))
        }
    }

    /// Runs `storectl demo mutate` on `path` (`commits` commits) and waits for it.
    static func mutateFromAnotherProcess(_ path: String, commits: Int, seed: Int) throws {
        let result = try runTool(storectlURL, ["demo", "mutate", path, "--commits", String(commits), "--per-commit", "4",
                                               "--seed", String(seed), "--durability", "relaxed"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func watchersCatchUpAfterAResumeWithOtherProcessesCommits() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 41, messages: 600, contacts: 20)
            defer { store.close() }
            // Other processes write with the demo feed's entities, which declare no text index.
            let configurations = WatcherContractTests.configurations.filter { !$0.searchable }
            let objects = configurations.map { store.watch($0.query, options: $0.options) }
            let indexes = configurations.map { store.watchIndexes($0.query, options: $0.options) }
            defer {
                objects.forEach { $0.cancel() }
                indexes.forEach { $0.cancel() }
            }
            var objectMirrors = [SectionedMirror<Message>](repeating: SectionedMirror(), count: configurations.count)
            var indexMirrors = objectMirrors
            func catchUp(to head: UInt64, _ context: String) throws {
                for (i, c) in configurations.enumerated() {
                    try waitUntilBlocking("\(c.name) reaches \(head)") {
                        while let batch = try objects[i].poll() { try objectMirrors[i].apply(batch) }
                        while let batch = try indexes[i].poll() { try IndexWatcherTests.apply(batch, to: &indexMirrors[i], reading: indexes[i]) }
                        return objects[i].sequence >= head && indexes[i].sequence >= head
                    }
                    try WatcherContractTests.check(objectMirrors[i], store, c, "\(c.name), \(context)")
                    try WatcherContractTests.check(indexMirrors[i], store, c, "\(c.name), \(context), indexes only")
                }
            }
            try catchUp(to: try store.read { try $0.journalBounds().last }, "initial")
            // A watcher that waits makes the process listen for other processes' commits.
            _ = try objects[0].next(timeout: 0.01)
            #expect(store.core.listeningForOtherCommits.current)
            #expect(try Self.locksHeld(under: path).contains { $0.file == "lock.mdb" }, "the check sees LMDB's lock")

            try store.suspend()
            #expect(store.isSuspended)
            let held = try Self.locksHeld(under: path)
            #expect(held.isEmpty, "locks held while suspended: \(held.map(\.line))")
            #expect(throws: FeedstoreError.storeSuspended(path: store.core.path)) { try store.read { try $0.journalBounds() } }
            #expect(throws: FeedstoreError.storeSuspended(path: store.core.path)) { try store.write { tx in try tx.put(Contact(id: 900, name: "Ada")) } }
            try store.suspend()  // again: nothing more

            // Another process, alone with the store (it opens it as the first one in), commits.
            try Self.mutateFromAnotherProcess(path, commits: 12, seed: 5)
            try store.resume()
            #expect(!store.isSuspended)
            #expect(try Self.locksHeld(under: path).contains { $0.file == "lock.mdb" }, "LMDB's lock is taken back")
            try catchUp(to: try store.read { try $0.journalBounds().last }, "after the resume")

            // Commits of both processes reach the watchers as before.
            try store.write { tx in try tx.put(Contact(id: 900, name: "Ada")) }
            try Self.mutateFromAnotherProcess(path, commits: 3, seed: 6)
            try catchUp(to: try store.read { try $0.journalBounds().last }, "after the resume, new commits")
            #expect(try store.verify().isEmpty)
        }
    }

    /// A suspension of a store whose files another process replaced meanwhile is not resumed
    /// onto them; a store keeping a commit log cannot be suspended.
    @Test func aResumeRefusesReplacedFilesAndACommitLogRefusesSuspension() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 42, messages: 50, contacts: 5)
            try store.suspend()
            let data = path + "/data.mdb"
            try FileManager.default.copyItem(atPath: data, toPath: data + ".copy")
            try FileManager.default.removeItem(atPath: data)
            try FileManager.default.moveItem(atPath: data + ".copy", toPath: data)
            #expect {
                try store.resume()
            } throws: { error in
                guard case let FeedstoreError.suspensionRefused(_, reason) = error else { return false }
                return reason.contains("replaced or removed")
            }
            #expect(store.isSuspended)
            store.close()

            var options = StoreOptions(durability: .full)
            options.keepsCommitLog = true
            let logged = try Store(path: dir + "/logged", entities: DemoFeed.entities, options: options)
            defer { logged.close() }
            #expect {
                try logged.suspend()
            } throws: { error in
                guard case let FeedstoreError.suspensionRefused(_, reason) = error else { return false }
                return reason.contains("commit log")
            }
            #expect(!logged.isSuspended)
            try logged.write { tx in try tx.put(Contact(id: 1, name: "Ada")) }
        }
    }
}
