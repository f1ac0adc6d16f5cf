import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The browser client's module (`feedstore-live.js`) on its own, under Node's test runner
/// (`Tests/JavaScript`): the contract's apply, connection statuses, recovery from a batch it
/// cannot apply, and calls made offline. The browser tests run it against the real server.
@Suite(.blocking) struct ClientModuleTests {
    static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("JavaScript/feedstore-live.test.mjs").path

    @Test func theModulePassesItsNodeTests() throws {
        let run = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["node", "--test", Self.tests], timeout: 120)
        #expect(run.status == 0, "node --test: \(run.stdout.suffix(4000)) \(run.stderr.suffix(2000))")
        #expect(run.stdout.contains("# fail 0") && !run.stdout.contains("# pass 0"), "\(run.stdout.suffix(500))")
    }
}
