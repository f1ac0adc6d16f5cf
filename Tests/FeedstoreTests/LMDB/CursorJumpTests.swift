@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A cursor's jump within its leaf page (`LMDBCursor.key(offsetBy:)`, which reads LMDB's page
/// layout) finds the key that stepping finds, at random positions and distances over keys of
/// random lengths; it answers within the page only, and never in a write transaction.
@Suite(.blocking) struct CursorJumpTests {
    @Test(arguments: testSeeds(3, base: 41)) func jumpsFindWhatSteppingFinds(seed: UInt64) throws {
        var random = RandomValues(seed: seed)
        try withTemporaryDirectory { dir in
            let environment = try LMDBEnvironment(path: dir, flags: [.noThreadLocalStorage, .noSync], mapSize: 64 << 20,
                                                  maxDatabases: 4, maxReaders: 8, mode: 0o600)
            defer { environment.close() }
            var txn = try LMDBTransaction(environment: environment, readOnly: false)
            let db = try #require(try txn.openDatabase(named: "keys", create: true))
            var keys = Set<[UInt8]>()
            while keys.count < 3_000 {
                keys.insert((0..<Int.random(in: 1...120, using: &random.rng)).map { _ in UInt8.random(in: 0...255, using: &random.rng) })
            }
            for key in keys { _ = try txn.put(db, key: key, value: [UInt8](repeating: 1, count: Int.random(in: 0...40, using: &random.rng))) }
            // Not in a write transaction: its changed pages are copies, not the map's.
            let jumpedInWrite = try txn.withCursor(db) { cursor throws -> Bool in
                _ = try cursor.first()
                return cursor.key(offsetBy: 1) != nil
            }
            #expect(!jumpedInWrite)
            try txn.commit()
            let sorted = keys.sorted { $0.lexicographicallyPrecedes($1) }
            let reader = try LMDBTransaction(environment: environment, readOnly: true)
            var jumped = 0
            try reader.withCursor(db) { cursor throws -> Void in
                for _ in 0..<2_000 {
                    let from = Int.random(in: 0..<sorted.count, using: &random.rng)
                    let distance = Int.random(in: -70...70, using: &random.rng)
                    let found = try cursor.seek(exactly: sorted[from])
                    #expect(found)
                    guard let key = cursor.key(offsetBy: distance) else { continue }
                    jumped += 1
                    #expect((0..<sorted.count).contains(from + distance), "seed \(seed): a jump of \(distance) from \(from) left the keys")
                    #expect(Array(key) == sorted[from + distance], "seed \(seed): a jump of \(distance) from \(from)")
                }
            }
            // Most jumps stay on their page; some leave it and find nothing.
            #expect(jumped > 200 && jumped < 2_000, "seed \(seed): \(jumped) jumps")
        }
    }
}
