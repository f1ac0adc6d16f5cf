import ArgumentParser
import Feedstore
import Foundation

struct JournalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Print journal entries: one line per changed record.",
        discussion: """
        Examples:
          storectl journal ./demo-store --after 100 --limit 20
          storectl journal ./demo-store --follow --jsonl
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Option(help: "Print commits after this sequence.")
    var after: UInt64 = 0

    @Option(help: "Most entries to print (then stop, also with --follow).")
    var limit: Int?

    @Flag(help: "Keep printing new commits as they come (stop with Ctrl-C).")
    var follow = false

    @Flag(help: "One JSON object per line: {\"sequence\", \"entity\", \"id\", \"kind\", \"changedFields\"}.")
    var jsonl = false

    func run() throws {
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            var position = after
            var printed = 0
            while true {
                let commits = try store.read { try $0.journal(after: position, limit: 256) }
                for commit in commits {
                    for entry in commit.entries {
                        if let limit, printed >= limit { return }
                        if jsonl {
                            StoreAccess.write(FieldValue.object([
                                "sequence": .uint(entry.sequence), "entity": .string(entry.entity), "id": entry.id,
                                "kind": .string(entry.kind.rawValue), "changedFields": .array(entry.changedFields.map { .string($0) }),
                            ]).jsonText)
                        } else {
                            let fields = entry.changedFields.isEmpty ? "" : " (\(entry.changedFields.joined(separator: ", ")))"
                            StoreAccess.write("\(entry.sequence)  \(entry.kind.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0))  \(entry.entity) \(entry.id.jsonText)\(fields)")
                        }
                        printed += 1
                    }
                    position = commit.sequence
                }
                if commits.isEmpty {
                    guard follow else { return }
                    usleep(20_000)
                }
            }
        }
    }
}
