import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// `Tools/check-layers` passes on the sources as they are, and fails on a copy with one reference
/// that goes up a layer: a type, or a method declared in an extension of a lower layer's type.
@Suite(.blocking) struct LayerCheckTests {
    static let root = packageRoot

    /// The check's exit status and output on a copy of the sources with `line` added to the
    /// end of `file` (under `Sources/Feedstore`).
    func check(adding line: String?, to file: String) throws -> (status: Int32, output: String) {
        try withTemporaryDirectory { dir in
            try FileManager.default.copyItem(atPath: Self.root.path + "/Sources", toPath: dir + "/Sources")
            if let line {
                let handle = try #require(FileHandle(forWritingAtPath: dir + "/Sources/Feedstore/" + file))
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(("\n" + line + "\n").utf8))
                try handle.close()
            }
            let result = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.root.path + "/Tools/check-layers", dir], timeout: 120)
            return (result.status, result.stdout + result.stderr)
        }
    }

    @Test func theSourcesHoldTheirLayers() throws {
        let result = try check(adding: nil, to: "Version.swift")
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func aMethodCalledFromALowerLayerFailsTheCheck() throws {
        // Storage reading commits through the change feed's methods on its own transaction.
        let result = try check(adding: """
            extension ReadTransaction {
                func probe() throws -> Int { try journal(after: 0, limit: 1).count }
                func probeEach() throws -> UInt64 { try forEachJournalEntry(after: 0) { _, _ in false } }
            }
            """, to: "Storage/Queries/IndexRange.swift")
        #expect(result.status == 1)
        #expect(result.output.contains("Storage calls journal(after:limit:), declared in ChangeFeed"), "\(result.output)")
        #expect(result.output.contains("Storage calls forEachJournalEntry(after:_:), declared in ChangeFeed"), "\(result.output)")
    }

    @Test func readingTheCountedIndexAboveStorageFailsTheCheck() throws {
        let result = try check(adding: """
            extension ReadTransaction { func probe(_ index: IndexSchema) throws -> Int { try accessCounts(of: index) { try $0.total(in: $1) } } }
            """, to: "Watch/Engine/WatchTarget.swift")
        #expect(result.status == 1)
        #expect(result.output.contains("Watch reads the counted index; use ResolvedQuery"), "\(result.output)")
    }

    @Test func aTypeUsedFromALowerLayerFailsTheCheck() throws {
        let result = try check(adding: "func probe(_ target: WatchTarget) {}", to: "Schema/RecordValues.swift")
        #expect(result.status == 1)
        #expect(result.output.contains("Schema uses WatchTarget, declared in Watch"), "\(result.output)")
    }
}
