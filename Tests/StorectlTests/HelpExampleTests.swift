import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import NATSTestServer
import Testing

/// Every example in `storectl`'s help runs as printed, on a terminal 80 columns wide, in a
/// directory where the demo store is made by the demo's own examples, and gives output. Commands
/// that run until stopped (watch, journal --follow, ship, follow, serve) must print before they
/// are stopped.
@Suite(.blocking) struct HelpExampleTests {
    /// An example as the help prints it, with its command's name.
    struct Example: CustomStringConvertible {
        var command: String
        var text: String
        var description: String { "storectl \(command): \(text)" }
    }

    /// The help of `command` (words after `storectl`) as an 80-column terminal shows it.
    static func help(_ command: [String]) throws -> String {
        let result = try runTool(storectlURL, ["help"] + command, environment: ["COLUMNS": "80"])
        #expect(result.status == 0, "storectl help \(command.joined(separator: " ")): \(result.stderr)")
        return result.stdout
    }

    /// The subcommands a help lists.
    static func subcommands(in help: String) -> [String] {
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { return [] }
        return help[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .prefix { !$0.isEmpty }
            .compactMap { line in line.hasPrefix("  ") && !line.hasPrefix("   ") ? line.split(separator: " ").first.map(String.init) : nil }
    }

    /// The examples of a help: lines that start with `storectl` (after "Example:" or an
    /// indent), joined with the lines their trailing backslash continues.
    static func examples(in help: String, command: String) -> [Example] {
        var examples: [Example] = []
        var pending: String?
        for line in help.split(separator: "\n") {
            var text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("Example: ") { text.removeFirst("Example: ".count) }
            if let open = pending {
                pending = nil
                text = open + " " + text
            } else if !text.hasPrefix("storectl ") {
                continue
            }
            if text.hasSuffix("\\") {
                pending = String(text.dropLast()).trimmingCharacters(in: .whitespaces)
            } else {
                examples.append(Example(command: command, text: text))
            }
        }
        return examples
    }

    @Test func everyExampleRunsAsPrintedAndGivesOutput() throws {
        // Every command and subcommand, and its examples.
        var commands: [[String]] = []
        var helps: [[String]: String] = [:]
        var queue = Self.subcommands(in: try Self.help([])).map { [$0] }
        while let command = queue.first {
            queue.removeFirst()
            let help = try Self.help(command)
            helps[command] = help
            // What the commands write (overview, discussion, examples) fits the terminal; the
            // usage line after it is the argument parser's.
            let written = help.components(separatedBy: "USAGE:").first ?? help
            for line in written.split(separator: "\n") where line.count > 80 {
                Issue.record("storectl help \(command.joined(separator: " ")) has a line wider than 80 columns: \(line)")
            }
            // A trailing backslash continues an example's command line, never prose (a `\\` in
            // the source prints one where `\` joins the lines).
            var continuing = false
            for line in written.split(separator: "\n") {
                let text = line.trimmingCharacters(in: .whitespaces)
                let inExample = continuing || text.hasPrefix("storectl ") || text.hasPrefix("Example: storectl ")
                if text.hasSuffix("\\") && !inExample {
                    Issue.record("storectl help \(command.joined(separator: " ")) ends a line of prose with a backslash: \(line)")
                }
                continuing = inExample && text.hasSuffix("\\")
            }
            commands.append(command)
            queue += Self.subcommands(in: help).map { command + [$0] }
        }
        #expect(commands.count >= 17, "\(commands)")
        var examples: [Example] = []
        for command in commands {
            let found = Self.examples(in: helps[command]!, command: command.joined(separator: " "))
            let runsSubcommands = !Self.subcommands(in: helps[command]!).isEmpty
            #expect(!found.isEmpty || runsSubcommands, "storectl \(command.joined(separator: " ")) has no example")
            examples += found
        }
        // The demo store is made by the demo's examples, then the others run on it; migrating it
        // comes last.
        func rank(_ example: Example) -> Int {
            switch example.command {
            case "demo populate": 0
            case "demo mutate": 1
            case "ship": 3
            case "follow": 4
            case "serve": 5
            case "inspect" where example.text.contains("--nats"): 5
            case "load" where example.text.contains("--nats"): 5
            case "promote": 6
            case "demo migrate": 8
            case let other where other.hasPrefix("demo"): 7
            default: 2
            }
        }
        examples = examples.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }.map(\.element)

        try withTemporaryDirectory { dir in
            let server = try NATSServer(directory: dir + "/nats")
            defer { server.stop() }
            for example in examples {
                // The examples' fixed ports may be taken on this machine: the servers take free ones.
                let text = example.text.replacingOccurrences(of: "nats://127.0.0.1:4222", with: server.url)
                    .replacingOccurrences(of: "--port 8080", with: "--port 0")
                let (status, output, errors, stopped) = try Self.run(text, in: dir)
                #expect(stopped || status == 0, "\(example) exits \(status): \(errors.suffix(500))")
                // A redirect sends the output to a file; anything else prints.
                let gaveOutput = !output.isEmpty || !errors.isEmpty || text.contains(" > ")
                #expect(gaveOutput, "\(example) printed nothing")
                // A count of nothing shows nothing: the example's range must hold records.
                #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) != "0", "\(example) prints 0")
            }
        }
    }

    /// Runs an example through the shell in `directory`, with the built storectl first on the
    /// path. Commands that keep running are stopped once they have printed (or after a while).
    static func run(_ example: String, in directory: String) throws -> (status: Int32, stdout: String, stderr: String, stopped: Bool) {
        let environment = ["PATH": buildProductsDirectory.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? ""), "COLUMNS": "80"]
        let keepsRunning = example.contains(" watch ") || example.contains("--follow") || example.contains(" ship ") || example.contains(" follow ")
            || example.contains(" promote ") || example.contains(" serve ")
        // A load through a replica needs a primary that accepts writes and a follower: the
        // ship and follow examples' own, run beside it.
        var helpers: [RunningTool] = []
        defer {
            for helper in helpers {
                helper.kill()
                _ = helper.finish(timeout: 30)
            }
        }
        if example.contains(" load "), let nats = example.range(of: "--nats ") {
            let options = "--nats " + example[nats.upperBound...].split(separator: " ").prefix(3).joined(separator: " ")
            for (command, marker) in [("storectl ship ./demo-store --accept-writes --no-snapshots \(options)", "accepting write requests"),
                                      ("storectl follow ./replica \(options)", "following stream")] {
                let helper = try RunningTool(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd '\(directory)' && exec " + command], environment: environment)
                helpers.append(helper)
                guard helper.waitFor(marker, timeout: 60) else { return (-1, "", "\(command) did not start: \(helper.finish(timeout: 5).stderr)", false) }
            }
        }
        // A command that keeps running replaces the shell, so that the interrupt reaches it.
        let tool = try RunningTool(URL(fileURLWithPath: "/bin/sh"), ["-c", "cd '\(directory)' && " + (keepsRunning ? "exec " : "") + example],
                                   environment: environment)
        guard keepsRunning else {
            let result = tool.finish(timeout: 300)
            return (result.status, result.stdout, result.stderr, false)
        }
        // Shipping goes on until its first snapshot is stored, following until it applied
        // what the stream held, promoting until it is done: what the next examples start from.
        let marker = example.contains(" ship ") ? "snapshot commit-" : example.contains(" follow ") ? "applied through"
            : example.contains(" promote ") ? "now ships to stream" : example.contains(" serve ") ? "/live" : nil
        let printed = marker.map { tool.waitFor($0, timeout: 60) } ?? tool.waitForOutput(timeout: 30)
        // Children of the test runner inherit its blocked signals: Ctrl-C would not reach them.
        tool.kill()
        let result = tool.finish(timeout: 30)
        return (result.status, result.stdout, result.stderr, printed)
    }
}
