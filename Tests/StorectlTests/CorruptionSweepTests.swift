import FeedstoreDemo
import FeedstoreTestSupport
import Foundation
import Testing

/// Seeded bit flips and truncations of a store's data file: `storectl verify` must end with 0
/// (the flips hit unused space), 1 (findings listed) or 2 (a typed error) — never die by a
/// signal. Damaged page structure must be found by the page check before any scan through LMDB
/// (which would crash on it; the scan runs in a child process as a second line of defence), and
/// a copy that verifies clean must read in full.
@Suite struct CorruptionSweepTests {
    @Test(arguments: testSeeds(1, base: 5)) func damagedDataFilesGiveFindingsOrErrorsNeverCrashes(seed: UInt64) async throws {
        try await onOwnThread { try self.damagedDataFilesGiveFindingsOrErrorsNeverCrashesOnItsThread(seed: seed) }
    }

    /// The body of ``damagedDataFilesGiveFindingsOrErrorsNeverCrashes(seed:)``, on a thread of its own (``onOwnThread(_:)``).
    func damagedDataFilesGiveFindingsOrErrorsNeverCrashesOnItsThread(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let base = dir + "/base"
            let populate = try runTool(storectlURL, ["demo", "populate", base, "--messages", "3000", "--contacts", "20", "--seed", "4"])
            #expect(populate.status == 0, "\(populate.stderr)")
            let original = try Data(contentsOf: URL(fileURLWithPath: base + "/data.mdb"))
            var rng = SeededGenerator(seed: seed)
            var outcomes: [Int32: Int] = [:]
            var crashedScans = 0
            let copies = TestSize.choose(quick: 25, long: 120)
            for copy in 0..<copies {
                let path = dir + "/c\(copy)"
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                var bytes = [UInt8](original)
                if copy % 10 == 9 {
                    // A truncation somewhere past the meta pages.
                    bytes.removeLast(Int.random(in: 1..<(bytes.count - 8_192), using: &rng))
                } else {
                    for _ in 0..<Int.random(in: 1...4, using: &rng) {
                        bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8(1 << Int.random(in: 0..<8, using: &rng))
                    }
                }
                try Data(bytes).write(to: URL(fileURLWithPath: path + "/data.mdb"))
                let result = try runTool(storectlURL, ["verify", path])
                outcomes[result.status, default: 0] += 1
                if result.stdout.contains("page structure is damaged") { crashedScans += 1 }
                #expect([0, 1, 2].contains(result.status), "copy \(copy), seed \(seed): exit \(result.status) \(result.stderr.prefix(300))")
                if result.status == 2 { #expect(result.stderr.hasPrefix("storectl: "), "copy \(copy): \(result.stderr.prefix(300))") }
                if result.status == 0 {
                    for entity in ["Message", "Contact"] {
                        let dump = try runTool(storectlURL, ["dump", path, "--entity", entity, "--jsonl"])
                        #expect(dump.status == 0, "copy \(copy), seed \(seed): verified clean, but dump \(entity) exits \(dump.status)")
                    }
                }
                try FileManager.default.removeItem(atPath: path)
            }
            // The sweep damaged real structure: findings were reported.
            #expect(outcomes[1, default: 0] > copies / 12, "\(outcomes)")
            #expect(crashedScans == 0, "seed \(seed): damage the page check missed crashed LMDB")
            print("corruption sweep, seed \(seed): exit statuses \(outcomes.sorted { $0.key < $1.key }), "
                + "\(crashedScans) scans crashed inside LMDB and were reported as findings")
        }
    }
}
