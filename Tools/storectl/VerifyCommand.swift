import ArgumentParser
import Feedstore
import Foundation

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check records, indexes, counts and journal against each other; exit 1 listing every finding.",
        discussion: """
        Scans everything: every record decodes; every index holds exactly its records' entries, in
        order, unique where declared; every index's counts agree with its entries at every
        position; the journal is contiguous and complete.
        Example: storectl verify ./demo-store --json
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @Flag(help: "Print {\"consistent\": bool, \"issues\": [{\"location\", \"problem\"}]}.")
    var json = false

    func run() throws {
        let bar = json || isatty(STDERR_FILENO) == 0 ? nil : ProgressBar()
        let issues = try StoreAccess.withReadOnlyStore(path) { store in
            try store.verify(progress: bar.map { bar in { bar.show($0, done: $1, total: $2) } })
        }
        bar?.clear()
        if json {
            StoreAccess.write(FieldValue.object([
                "consistent": .bool(issues.isEmpty),
                "issues": .array(issues.map { .object(["location": .string($0.location), "problem": .string($0.problem)]) }),
            ]).jsonText)
        } else if issues.isEmpty {
            print("consistent: records, indexes, counts and journal agree")
        } else {
            for issue in issues { print(issue) }
            print("\(issues.count) finding\(issues.count == 1 ? "" : "s")")
        }
        if !issues.isEmpty { throw ExitCode(1) }
    }
}
