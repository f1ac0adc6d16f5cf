import ArgumentParser
import Feedstore
import Foundation

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check LMDB's pages, then records, types, indexes, counts and journal against each other; exit 1 listing every finding.",
        discussion: """
        Scans everything: LMDB's page structure is sound (checked first, reading the file without \
        LMDB); every record decodes and holds the fields its entity's Swift type declares, in \
        their kinds (records an unfinished migration has not reached are exempt); every index holds exactly its records' entries, in order, \
        unique where declared; every index's counts agree with its entries at every position; the \
        journal is contiguous and complete.

        Where the store holds no declared kinds for an entity (it was last opened without the \
        application's types), its records cannot be held to them: verify says so, and still \
        reports any field whose records hold values of several kinds, and any field the type \
        does not declare.

        With --format json the report is {"consistent": bool, "issues": [{"location", \
        "problem"}], "typesNotChecked": [entity]}; jsonl, table and csv print one row per \
        finding (none when consistent).

        Examples:
          storectl verify ./demo-store
          storectl verify ./demo-store --format json
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @OptionGroup var output: FormatOption

    /// Set in the child that does the scan.
    @Flag(name: .customLong("in-process"), help: .hidden)
    var inProcess = false

    func run() throws {
        guard inProcess else { return try scanInChild() }
        let bar = output.chosen != .text || isatty(STDERR_FILENO) == 0 ? nil : ProgressBar()
        var issues: [VerificationIssue]
        var unchecked: [String] = []
        do {
            // Opening reads trees; with damaged pages, that alone could crash.
            (issues, unchecked) = try StoreAccess.withReadOnlyStore(path, immutable: access.immutable, verifyPages: true) { store in
                (try store.verify(progress: bar.map { bar in { bar.show($0, done: $1, total: $2) } }), try store.entitiesWithUncheckedTypes)
            }
        } catch let FeedstoreError.damagedFile(_, problems) {
            issues = problems.map { VerificationIssue(location: "data.mdb", problem: $0) }
        }
        bar?.clear()
        try report(issues, typesNotChecked: unchecked)
    }

    /// LMDB trusts its page pointers, so a damaged page can crash the process reading it. The
    /// page check finds such damage before LMDB reads a tree; as a second line of defence, the
    /// scan runs in a child (this command with `--in-process`), and a child killed by a signal is
    /// reported as a finding instead of taking storectl down with it.
    private func scanInChild() throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        child.arguments = ["verify", path, "--in-process", "--format", output.chosen.rawValue] + (access.immutable ? ["--immutable"] : [])
        // A crash is expected news here: no backtrace on the terminal.
        child.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { $1 }
        try child.run()
        child.waitUntilExit()
        guard child.terminationReason == .uncaughtSignal else {
            if child.terminationStatus != 0 { throw ExitCode(child.terminationStatus) }
            return
        }
        try report([VerificationIssue(location: "data.mdb",
                                  problem: "the LMDB page structure is damaged: reading it crashed the scan (signal \(child.terminationStatus))")])
    }

    private func report(_ issues: [VerificationIssue], typesNotChecked: [String] = []) throws {
        switch output.chosen {
        case .json:
            Output.line(FieldValue.object([
                "consistent": .bool(issues.isEmpty),
                "issues": .array(issues.map { .object(["location": .string($0.location), "problem": .string($0.problem)]) }),
                "typesNotChecked": .array(typesNotChecked.map { .string($0) }),
            ]).jsonText)
        case .text where issues.isEmpty && !typesNotChecked.isEmpty:
            Output.line("consistent: records, indexes, counts and journal agree; types: not checked for "
                + "\(typesNotChecked.joined(separator: ", ")): open the store once with the application's types")
        case .jsonl, .table, .csv:
            let printer = RowPrinter(format: output.chosen, columns: ["location", "problem"])
            for issue in issues { printer.row([Cell(.string(issue.location)), Cell(.string(issue.problem))]) }
            printer.finish()
        case .text where issues.isEmpty:
            Output.line("consistent: records, types, indexes, counts and journal agree")
        case .text:
            for issue in issues { Output.line("\(issue)") }
            Output.line("\(issues.count) finding\(issues.count == 1 ? "" : "s")")
        }
        if !issues.isEmpty { throw ExitCode(1) }
    }
}
