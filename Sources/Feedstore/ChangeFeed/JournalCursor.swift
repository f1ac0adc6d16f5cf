/// A named, durable consumer position in the journal: a consumer reads the commits after its
/// position with ``next(limit:)``, processes them, then records progress with
/// ``acknowledge(through:)``. The position survives restarts and is shared by every process;
/// retention keeps the commits a cursor has not acknowledged (within the hard bounds).
public final class JournalCursor: Sendable {
    /// Where a new cursor starts.
    public enum Start: Sendable {
        /// After the newest commit: only future commits are read.
        case latest
        /// Before the oldest retained commit.
        case oldest
    }

    /// The cursor's name, unique in the store.
    public let name: String
    let store: Store

    init(name: String, store: Store) {
        self.name = name
        self.store = store
    }

    /// The last sequence this cursor acknowledged.
    public func position() throws -> UInt64 {
        try store.read { tx in
            guard let position = try tx.access({ try DurableCursors(core: tx.core).position(of: name, in: $0) }) else {
                throw FeedstoreError.corruptData(what: "journal cursor \(name)", reason: "it was removed")
            }
            return position
        }
    }

    /// The commits after the cursor's position (it does not move until acknowledged).
    /// - Throws: ``FeedstoreError/journalBehindRetention(requested:firstRetained:)`` when a hard
    ///   retention bound trimmed commits the cursor had not acknowledged.
    public func next(limit: Int = 100) throws -> [JournalCommit] {
        let after = try position()
        return try store.read { try $0.journal(after: after, limit: limit) }
    }

    /// Records that every commit through `sequence` was processed.
    public func acknowledge(through sequence: UInt64) throws {
        try store.write { tx in
            try tx.access { txn in
                let cursors = DurableCursors(core: tx.core)
                let current = try cursors.position(of: name, in: txn) ?? 0
                if sequence > current { try cursors.setPosition(sequence, of: name, in: txn) }
            }
        }
    }

    /// Records that every commit through `sequence` was processed, with this process's next
    /// commit instead of a commit (and a sync) of its own: for a consumer that acknowledges after
    /// every round, many times a second. Until a commit records it (or the store closes) the move
    /// is this process's alone; after a crash the cursor is where it was, and the consumer reads
    /// those commits again.
    public func acknowledgeWithNextCommit(through sequence: UInt64) {
        store.core.deferredCursorMoves.note(name, through: sequence)
    }

    /// Moves the cursor to just after the newest commit (after a reset, for instance).
    public func skipToLatest() throws {
        try store.write { tx in
            let last = try tx.journalBounds().last
            try tx.access { try DurableCursors(core: tx.core).setPosition(last, of: name, in: $0) }
        }
    }

    /// Deletes the cursor; retention no longer waits for it.
    public func remove() throws {
        try store.write { tx in try tx.access { try DurableCursors(core: tx.core).remove(name, in: $0) } }
    }
}

extension Store {
    /// The durable journal cursor named `name`, created at `start` when it does not exist.
    public func journalCursor(named name: String, start: JournalCursor.Start = .latest) throws -> JournalCursor {
        try write { tx in
            try tx.access { txn in
                let cursors = DurableCursors(core: tx.core)
                if try cursors.position(of: name, in: txn) != nil { return }
                let bounds = try tx.journalBounds()
                let position = start == .latest ? bounds.last : (bounds.first > 0 ? bounds.first - 1 : 0)
                try cursors.setPosition(position, of: name, in: txn)
            }
        }
        return JournalCursor(name: name, store: self)
    }

    /// Trims the journal now, as far as retention allows, and removes every trimmed commit's keys
    /// (writes also trim, removing a bounded number of keys each).
    public func trimJournal() throws {
        try write { tx in
            let bounds = try tx.journalBounds()
            _ = try tx.access { txn in
                try JournalTrimmer(core: tx.core).trim(in: txn, lastSequence: bounds.last, budget: .max)
            }
        }
    }
}
