import Foundation

/// How long the journal keeps commits.
///
/// Commits older than the newest `minimumCommits` are trimmed once every durable cursor has
/// passed them. The hard bounds trim even commits a cursor has not reached (that cursor then gets
/// ``FeedstoreError/journalBehindRetention(requested:firstRetained:)`` and must reset), so a
/// consumer that never comes back cannot grow the file forever.
public struct JournalRetention: Sendable, Hashable {
    public var minimumCommits: UInt64
    public var maximumCommits: UInt64?
    public var maximumAge: TimeInterval?

    public init(minimumCommits: UInt64 = 1_000, maximumCommits: UInt64? = nil, maximumAge: TimeInterval? = nil) {
        self.minimumCommits = minimumCommits
        self.maximumCommits = maximumCommits
        self.maximumAge = maximumAge
    }
}
