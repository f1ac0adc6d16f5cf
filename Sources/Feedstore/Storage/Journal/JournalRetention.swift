import Foundation

/// How long the journal keeps commits.
///
/// Commits older than the newest `minimumCommits` are trimmed once every durable cursor has
/// passed them. The hard bounds trim even commits a cursor has not reached (that cursor then gets
/// ``FeedstoreError/journalBehindRetention(requested:firstRetained:)`` and must reset), so a
/// consumer that never comes back cannot grow the file forever.
///
/// A trimmed commit is gone for readers at once; its keys are removed by the following writes,
/// at most 2,048 every 16 commits, so trimming the large commits of a bulk load never makes one
/// small commit slow. ``Store/trimJournal()`` removes them all at once.
public struct JournalRetention: Sendable, Hashable {
    /// The newest commits always kept (default 1,000).
    public var minimumCommits: UInt64
    /// When set, at most this many commits are kept, even if a cursor has not read them.
    public var maximumCommits: UInt64?
    /// When set, commits older than this many seconds are trimmed, even if a cursor has not read them.
    public var maximumAge: TimeInterval?
    /// When set, the oldest commits are trimmed while the journal's pages take more than this many
    /// bytes, even if a cursor has not read them.
    public var maximumBytes: Int?

    /// A retention policy; by default keep 1,000 commits and whatever durable cursors still need.
    public init(minimumCommits: UInt64 = 1_000, maximumCommits: UInt64? = nil, maximumAge: TimeInterval? = nil,
                maximumBytes: Int? = nil)
    {
        self.minimumCommits = minimumCommits
        self.maximumCommits = maximumCommits
        self.maximumAge = maximumAge
        self.maximumBytes = maximumBytes
    }
}
