import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The DocC catalog builds with no warning: every symbol link in the articles and the doc
/// comments resolves to exactly one symbol.
@Suite(.blocking) struct DocumentationTests {
    @Test func theDocumentationBuildsWithoutWarnings() throws {
        let root = packageRoot
        let result = try runTool(root.appendingPathComponent("Tools/docs"), [], timeout: 900)
        // SwiftPM's warnings about a dependency's files (`warning: 'swift-distributed-tracing':
        // found 1 file(s) which are unhandled`) are that package's, not the catalog's.
        let identity = root.lastPathComponent.lowercased()
        let diagnostics = (result.stdout + result.stderr).split(separator: "\n").filter {
            ($0.hasPrefix("warning:") || $0.hasPrefix("error:")) && !($0.hasPrefix("warning: '") && !$0.hasPrefix("warning: '\(identity)'"))
        }
        #expect(result.status == 0, "Tools/docs failed:\n\(diagnostics.joined(separator: "\n"))\n\(result.stderr.suffix(2_000))")
        #expect(diagnostics.isEmpty, "\(diagnostics.joined(separator: "\n"))")
    }

    /// The newest release in CHANGELOG.md is the version the library reports (and `storectl
    /// --version`, whose test compares it with ``feedstoreVersion``).
    @Test func theChangelogsNewestReleaseIsThisVersion() throws {
        let root = packageRoot
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let releases = changelog.split(separator: "\n").filter { $0.hasPrefix("## ") }.map { $0.dropFirst(3).split(separator: " ")[0] }
        #expect(releases.first.map(String.init) == feedstoreVersion, "\(releases)")
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("from: \"\(feedstoreVersion)\""), "the README's dependency line names this version")
    }
}
