import Foundation

/// A stream's history as its message ids tell it, read message by message: positions increase
/// along the stream (``ChangeEnvelope/MessageID/position``), so a commit is found by bisection
/// in a few reads however long the stream.
struct StreamHistory {
    let connection: NATSConnection
    let stream: String

    /// The id of the message at `sequence`; nil when the stream no longer holds it.
    func id(at sequence: UInt64) throws -> ChangeEnvelope.MessageID? {
        guard let message = try connection.message(stream, at: sequence) else { return nil }
        guard let id = message.id.flatMap(ChangeEnvelope.parseMessageID) else {
            throw JetStreamError.badEnvelope(streamSequence: sequence, reason: "no Feedstore message id")
        }
        return id
    }

    /// The last stream sequence in `range` whose message's position is at most `position`, or
    /// `range.lowerBound - 1` when there is none.
    func lastSequence(atOrBefore position: UInt64, in range: ClosedRange<UInt64>) throws -> UInt64 {
        func positionAt(_ sequence: UInt64) throws -> UInt64 {
            guard let id = try id(at: sequence) else {
                throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the stream dropped message \(sequence) while it was read")
            }
            return id.position
        }
        guard try positionAt(range.lowerBound) <= position else { return range.lowerBound - 1 }
        var low = range.lowerBound, high = range.upperBound
        while low < high {
            let middle = low + (high - low + 1) / 2
            if try positionAt(middle) <= position { low = middle } else { high = middle - 1 }
        }
        return low
    }
}
