@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A store on a small filesystem, written until the disk is full: the writer gets a typed error,
/// and the store still opens, verifies clean and holds every acknowledged commit.
@Suite(.blocking) struct DiskFullTests {
    /// A 3 MB tmpfs mounted for the test, or, where mounting is not allowed, a child process
    /// limited to 3 MB of file size (`ulimit -f`), which fails writes the same way.
    struct SmallDisk {
        let path: String
        let mounted: Bool

        init(_ dir: String) throws {
            path = dir + "/small"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            mounted = (try? runTool(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=3m", "tmpfs", path]).status) == 0
        }

        /// Runs storectl with `arguments`, under the file-size limit when not mounted.
        func storectl(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            if mounted { return try runTool(storectlURL, arguments) }
            let quoted = arguments.map { "'\($0)'" }.joined(separator: " ")
            return try runTool(URL(fileURLWithPath: "/bin/bash"), ["-c", "trap '' XFSZ; ulimit -f 3072; exec '\(storectlURL.path)' \(quoted)"])
        }

        func unmount() { if mounted { _ = try? runTool(URL(fileURLWithPath: "/bin/umount"), [path]) } }
    }

    @Test func writingUntilTheDiskIsFullLosesNothingAcknowledged() throws {
        try withTemporaryDirectory { dir in
            let disk = try SmallDisk(dir)
            defer { disk.unmount() }
            let path = disk.path + "/s"
            let populate = try disk.storectl(["demo", "populate", path, "--messages", "500", "--contacts", "10"])
            #expect(populate.status == 0, "\(populate.stderr)")
            let writer = try disk.storectl(["demo", "mutate", path, "--commits", "1000000", "--per-commit", "50", "--durability", "full"])
            // The writer stops with a typed error once the disk is full, not a crash.
            #expect(writer.status == 2, "exit \(writer.status): \(writer.stderr)")
            // ENOSPC is reported as a full disk; LMDB reports the size limit's EFBIG as an I/O error.
            let expected = disk.mounted ? "no space left on the device" : "storectl: mdb_txn_commit failed"
            #expect(writer.stderr.contains(expected), "\(writer.stderr)")
            let acknowledged = writer.stdout.split(separator: "\n").compactMap { UInt64($0.dropFirst("committed ".count)) }
            #expect(acknowledged.count > 10, "the disk filled before the test wrote anything")

            // The store still opens and reads, verifies clean, and holds every acknowledged commit.
            let store = try Store(path: path, options: StoreOptions(readOnly: true))
            defer { store.close() }
            #expect(try store.read { try $0.journalBounds().last } >= (acknowledged.max() ?? 0))
            #expect(try store.verify().isEmpty)
            #expect(try store.read { try $0.count(entity: "Message") } > 0)
            let inspect = try runTool(storectlURL, ["inspect", path])
            #expect(inspect.status == 0, "\(inspect.stderr)")
        }
    }
}
