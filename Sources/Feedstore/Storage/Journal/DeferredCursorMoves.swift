/// Cursor positions to record with the store's next commit
/// (``JournalCursor/acknowledgeWithNextCommit(through:)``): a consumer that acknowledges after
/// every round then costs no commit and no sync of its own. Held in memory by this process
/// until a commit of its writer records them, or the store closes.
final class DeferredCursorMoves: Sendable {
    private let moves = Protected<[String: UInt64]>([:])

    /// Notes that cursor `name` may move to `sequence`.
    func note(_ name: String, through sequence: UInt64) {
        moves.withLock { $0[name] = max($0[name] ?? 0, sequence) }
    }

    var isEmpty: Bool { moves.withLock { $0.isEmpty } }

    /// Writes the noted moves in `txn`, never moving a cursor back and never bringing back one
    /// that was removed. Returns every move this settles once `txn` commits.
    func write(in txn: borrowing LMDBTransaction, cursors: DurableCursors) throws -> [String: UInt64] {
        let noted = moves.withLock { $0 }
        for (name, sequence) in noted {
            guard let current = try cursors.position(of: name, in: txn), current < sequence else { continue }
            try cursors.setPosition(sequence, of: name, in: txn)
        }
        return noted
    }

    /// Forgets the moves a commit settled (unless a later one was noted meanwhile).
    func committed(_ settled: [String: UInt64]) {
        guard !settled.isEmpty else { return }
        moves.withLock { moves in
            for (name, sequence) in settled where moves[name] == sequence { moves[name] = nil }
        }
    }
}
