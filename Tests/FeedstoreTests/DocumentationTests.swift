import FeedstoreTestSupport
import Foundation
import Testing

/// The DocC catalog builds with no warning: every symbol link in the articles and the doc
/// comments resolves to exactly one symbol.
@Suite struct DocumentationTests {
    @Test func theDocumentationBuildsWithoutWarnings() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let result = try runTool(root.appendingPathComponent("Tools/docs"), [], timeout: 900)
        let diagnostics = (result.stdout + result.stderr).split(separator: "\n").filter {
            $0.hasPrefix("warning:") || $0.hasPrefix("error:")
        }
        #expect(result.status == 0, "Tools/docs failed:\n\(diagnostics.joined(separator: "\n"))\n\(result.stderr.suffix(2_000))")
        #expect(diagnostics.isEmpty, "\(diagnostics.joined(separator: "\n"))")
    }
}
