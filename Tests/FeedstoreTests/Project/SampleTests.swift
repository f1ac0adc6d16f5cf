import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Every Swift code block of README.md and of the DocC catalog compiles against the library, in
/// Swift 6 language mode, with UIKit and SwiftUI from the stand-ins in `Tests/Samples/StandIns`.
/// The markers a block may carry are described in `Tests/Samples/README.md`.
@Suite(.blocking) struct SampleTests {
    static let root = packageRoot

    @Test func everyCodeSampleCompiles() throws {
        let documents = ["README.md"] + (try FileManager.default.contentsOfDirectory(atPath: Self.root.path + "/Sources/Feedstore/Feedstore.docc"))
            .filter { $0.hasSuffix(".md") }.sorted().map { "Sources/Feedstore/Feedstore.docc/" + $0 }
        let samples = try documents.flatMap { try CodeSample.all(in: String(contentsOf: Self.root.appendingPathComponent($0), encoding: .utf8), file: $0) }
        #expect(samples.count >= 20, "the documents hold about two dozen samples")
        #expect(documents.allSatisfy { document in samples.contains { $0.file == document } || !Self.hasSwiftBlock(document) })
        try withTemporaryDirectory { dir in
            let compiler = try SampleCompiler(root: Self.root, directory: dir)
            for sample in samples {
                let failure = try compiler.check(sample)
                if sample.mustFail {
                    #expect(failure != nil, "\(sample.file):\(sample.line) compiles, but must not")
                } else if let failure {
                    Issue.record("\(sample.file):\(sample.line) does not compile:\n\(failure)")
                }
            }
        }
    }

    /// What the typed API must refuse at compile time (`Tests/Samples/Misuses.md`): each block
    /// fails, with the error its comment names.
    @Test func misusesDoNotCompile() throws {
        let file = "Tests/Samples/Misuses.md"
        let samples = CodeSample.all(in: try String(contentsOf: Self.root.appendingPathComponent(file), encoding: .utf8), file: file)
        #expect(samples.count >= 6)
        try withTemporaryDirectory { dir in
            let compiler = try SampleCompiler(root: Self.root, directory: dir)
            for sample in samples {
                #expect(sample.mustFail, "\(file):\(sample.line) is marked must fail")
                let expected = try #require(sample.expectedError, "\(file):\(sample.line) names its error")
                let failure = try compiler.check(sample)
                #expect(failure?.contains(expected) == true, "\(file):\(sample.line): expected \"\(expected)\", got \(failure ?? "no error")")
            }
        }
    }

    /// Feedstore's UIKit and AppKit adapters, which the package builds only where those
    /// frameworks exist, compile against the stand-ins.
    @Test(arguments: [("UIKit", "UITableView"), ("UIKit", "UICollectionView"), ("AppKit", "NSCollectionView")])
    func theFrameworkAdaptersCompile(framework: String, view: String) throws {
        try withTemporaryDirectory { dir in
            let compiler = try SampleCompiler(root: Self.root, directory: dir)
            let failure = try compiler.checkAdapter("TableUpdates+\(framework).swift", view: view)
            #expect(failure == nil, "\(failure ?? "")")
        }
    }

    /// The SwiftUI property wrappers and the environment's store compile against the stand-in,
    /// in a view that uses them.
    @Test func theSwiftUIWrappersCompile() throws {
        let probe = """
            struct Item: Entity {
                var id: UInt64
                var rank: Int64
                static let byRank = index(\\.rank)
                static let indexes = [byRank.definition]
            }
            struct Probe: View {
                @LiveList var items: LazyLiveList<Item>
                @LiveQuery(Query(Item.byRank)) var small: [Item]
                init(rank: Int64) { _items = LiveList(Query(Item.byRank, prefix: rank)) }
                var body: some View {
                    List(items) { Text("\\($0.rank) \\(small.count) \\($small.sequence)") }
                }
            }
            @MainActor func root(_ store: Store) -> some View { Probe(rank: 1).feedstore(store) }
            """
        try withTemporaryDirectory { dir in
            let compiler = try SampleCompiler(root: Self.root, directory: dir)
            let failure = try compiler.checkAdapter("LiveList+SwiftUI.swift", probe: probe)
            #expect(failure == nil, "\(failure ?? "")")
        }
    }

    /// A sample that does not compile is reported: the check can fail.
    @Test func aSampleThatDoesNotCompileIsReported() throws {
        let markdown = """
            <!-- sample: context entities store -->
            ```swift
            let count: Int = try store.read { tx in try tx.count(Message.self) }
            ```

            ```swift
            import Feedstore
            let store = try Store(path: "x", entities: [Message.self])
            ```
            """
        let samples = CodeSample.all(in: markdown, file: "test.md")
        #expect(samples.map(\.line) == [2, 6])
        try withTemporaryDirectory { dir in
            let compiler = try SampleCompiler(root: Self.root, directory: dir)
            #expect(try compiler.check(samples[0]) == nil)
            let failure = try compiler.check(samples[1])
            #expect(failure?.contains("Message") == true, "\(failure ?? "compiled")")
        }
    }

    private static func hasSwiftBlock(_ document: String) -> Bool {
        ((try? String(contentsOf: root.appendingPathComponent(document), encoding: .utf8)) ?? "").contains("```swift")
    }
}

/// A Swift code block of a document, with the markers that went before it.
struct CodeSample {
    var file: String
    /// The line of the block's opening fence.
    var line: Int
    var code: String
    /// Files of `Tests/Samples/Contexts` compiled beside the block (what it refers to).
    var contexts: [String] = []
    /// A fragment of a `Package.swift`: the arguments of `Package(name:…)`.
    var isManifest = false
    /// A misuse the compiler must refuse, with the message its `// error:` comment names.
    var mustFail = false

    /// What the block's `// error: …` comment says the compiler answers.
    var expectedError: String? {
        code.split(separator: "\n").first { $0.hasPrefix("// error: ") }.map { String($0.dropFirst("// error: ".count)) }
    }

    /// The blocks of `markdown`; a block marked `continues` is joined to the one before it.
    static func all(in markdown: String, file: String) -> [CodeSample] {
        var samples: [CodeSample] = []
        var markers: [String] = []
        var current: (sample: CodeSample, indent: Int, lines: [String])?
        for (number, line) in markdown.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var block = current {
                if trimmed == "```" {
                    block.sample.code = block.lines.joined(separator: "\n") + "\n"
                    if markers.contains("continues"), var previous = samples.popLast() {
                        previous.code += block.sample.code
                        previous.contexts += block.sample.contexts
                        samples.append(previous)
                    } else {
                        samples.append(block.sample)
                    }
                    current = nil
                    markers = []
                } else {
                    block.lines.append(String(line.dropFirst(min(block.indent, line.prefix { $0 == " " }.count))))
                    current = block
                }
            } else if trimmed.hasPrefix("<!-- sample:"), trimmed.hasSuffix("-->") {
                markers += trimmed.dropFirst("<!-- sample:".count).dropLast(3).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            } else if trimmed == "```swift" {
                var sample = CodeSample(file: file, line: number + 1, code: "")
                sample.contexts = markers.filter { $0.hasPrefix("context ") }.flatMap { $0.dropFirst("context ".count).split(separator: " ").map(String.init) }
                sample.isManifest = markers.contains("manifest")
                sample.mustFail = markers.contains("must fail")
                current = (sample, line.prefix { $0 == " " }.count, [])
            }
        }
        return samples
    }
}

/// Type-checks samples with the toolchain's `swiftc` against the modules of this test build.
struct SampleCompiler {
    let root: URL
    let directory: String
    let swiftc: URL
    let modules: String

    init(root: URL, directory: String) throws {
        self.root = root
        self.directory = directory
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swiftc" }
        guard let found = path.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw CompilerMissing()
        }
        swiftc = URL(fileURLWithPath: found)
        modules = buildProductsDirectory.appendingPathComponent("Modules").path
        // The stand-ins, as modules of their own.
        let standIns = root.path + "/Tests/Samples/StandIns/"
        for (module, shared) in [("UIKit", ["NSDiffableDataSourceSnapshot"]), ("AppKit", ["NSDiffableDataSourceSnapshot"]), ("SwiftUI", []), ("SwiftData", [])] {
            let built = try runTool(swiftc, ["-emit-module", "-parse-as-library", "-swift-version", "6", "-module-name", module,
                                             "-emit-module-path", "\(directory)/\(module).swiftmodule"]
                                        + ([module] + shared).map { standIns + $0 + ".swift" })
            guard built.status == 0 else { throw StandInFailed(output: built.stderr) }
        }
    }

    /// Where the compiler finds the LMDB module the library was built with: the system's, or,
    /// built with the BundledLMDB trait, the bundled one's, whose module map SwiftPM makes in
    /// the build folder.
    var lmdbModuleSearchPaths: [String] {
        let bundled = buildProductsDirectory.appendingPathComponent("CLMDB.build").path
        return ["-I", root.path + "/Sources/CFeedstoreLMDB"] + (FileManager.default.fileExists(atPath: bundled + "/module.modulemap") ? ["-I", bundled] : [])
    }

    /// The module maps of the C targets this build compiled (of the library's dependencies, such
    /// as SwiftNIO's): a module that imports one needs its map, as SwiftPM passes it.
    var cModuleMaps: [String] {
        let products = buildProductsDirectory
        let checkouts = products.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("checkouts").path
        let files = FileManager.default
        let built = ((try? files.contentsOfDirectory(atPath: products.path)) ?? []).filter { $0.hasSuffix(".build") }.map { String($0.dropLast(6)) }
        var maps: [String] = []
        for target in built {
            let generated = products.appendingPathComponent(target + ".build/module.modulemap").path
            if files.fileExists(atPath: generated) { maps.append(generated) }
        }
        let builtTargets = Set(built)
        for package in (try? files.contentsOfDirectory(atPath: checkouts)) ?? [] {
            for target in (try? files.contentsOfDirectory(atPath: "\(checkouts)/\(package)/Sources")) ?? [] where builtTargets.contains(target) {
                let declared = "\(checkouts)/\(package)/Sources/\(target)/include/module.modulemap"
                if files.fileExists(atPath: declared), !maps.contains(where: { $0.hasSuffix("/\(target).build/module.modulemap") }) { maps.append(declared) }
            }
        }
        return maps.flatMap { ["-Xcc", "-fmodule-map-file=" + $0] }
    }

    struct CompilerMissing: Error {}
    struct StandInFailed: Error { var output: String }

    /// Nil when the adapter `file` of `Sources/Feedstore/Watch/UI` compiles, as a module of its own
    /// that imports Feedstore, and applies `TableUpdates` to a `view`; else the compiler's
    /// messages. (The call fails to compile if the adapter's `#if` left it out.)
    func checkAdapter(_ file: String, view: String) throws -> String? {
        try checkAdapter(file, probe: "@MainActor func probe(_ updates: TableUpdates, _ view: \(view)) { view.performBatchUpdates(updates) }")
    }

    /// Nil when an adapter of `Sources/Feedstore/Watch/UI/` compiles outside the library, as an
    /// app's build would compile it, with `probe` (code that uses it) beside it.
    func checkAdapter(_ file: String, probe: String) throws -> String? {
        let source = try String(contentsOfFile: root.path + "/Sources/Feedstore/Watch/UI/" + file, encoding: .utf8)
        let probe = "\n" + probe + "\n"
        let path = "\(directory)/\(file)"
        try ("import Feedstore\n" + source + probe).write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runTool(swiftc, ["-typecheck", "-swift-version", "6", "-parse-as-library", "-I", modules, "-I", directory]
                                     + lmdbModuleSearchPaths + [path], timeout: 300)
        return result.status == 0 ? nil : result.stderr + result.stdout
    }

    /// Nil when `sample` compiles; else the compiler's messages.
    func check(_ sample: CodeSample) throws -> String? {
        let name = "\(directory)/\(sample.file.replacingOccurrences(of: "/", with: "_"))-\(sample.line)"
        try FileManager.default.createDirectory(atPath: name, withIntermediateDirectories: true)
        var arguments = ["-typecheck", "-swift-version", "6"]
        if sample.isManifest {
            let manifest = "import PackageDescription\n\nlet package = Package(\n    name: \"App\",\n" + sample.code + ")\n"
            try manifest.write(toFile: name + "/Package.swift", atomically: true, encoding: .utf8)
            let api = swiftc.deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("lib/swift/pm/ManifestAPI").path
            arguments += ["-I", api, "-package-description-version", "6.2", name + "/Package.swift"]
        } else {
            try sample.code.write(toFile: name + "/main.swift", atomically: true, encoding: .utf8)
            arguments += ["-I", modules, "-I", directory, "-I", root.path + "/Sources/CFeedstoreNATS", "-I", root.path + "/Sources/CFeedstoreCrypto"]
                + lmdbModuleSearchPaths + (sample.code.contains("import Hummingbird") || sample.code.contains("import FeedstoreHummingbird") ? cModuleMaps : [])
                + [name + "/main.swift"]
            arguments += sample.contexts.map { root.path + "/Tests/Samples/Contexts/\($0).swift" }
            // Feedstore's UIKit and SwiftUI adapters, compiled as they are where those exist.
            let sources = [sample.code] + (try sample.contexts.map { try String(contentsOfFile: root.path + "/Tests/Samples/Contexts/\($0).swift", encoding: .utf8) })
            for (framework, file) in [("UIKit", "TableUpdates+UIKit.swift"), ("SwiftUI", "LiveList+SwiftUI.swift")]
            where sources.contains(where: { $0.contains("import \(framework)") }) {
                let adapter = try String(contentsOfFile: root.path + "/Sources/Feedstore/Watch/UI/" + file, encoding: .utf8)
                try ("import Feedstore\n" + adapter).write(toFile: name + "/" + file, atomically: true, encoding: .utf8)
                arguments.append(name + "/" + file)
            }
        }
        let result = try runTool(swiftc, arguments, timeout: 300)
        return result.status == 0 ? nil : result.stderr + result.stdout
    }
}
