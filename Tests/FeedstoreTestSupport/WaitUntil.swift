import Foundation

/// A condition a test waits for did not hold within the guard's time.
public struct ConditionTimedOut: Error, CustomStringConvertible {
    public let description: String
}

/// Waits until `condition` holds, checking every few milliseconds. The 60 s guard stops a hang;
/// no test depends on how fast the condition comes.
public func waitUntil(_ what: String, guard limit: Duration = .seconds(60), _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw ConditionTimedOut(description: "\(what): not within \(limit)") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// ``waitUntil(_:guard:_:)`` for synchronous tests: blocks the calling thread while it waits.
public func waitUntilBlocking(_ what: String, guard limit: Duration = .seconds(60), _ condition: () throws -> Bool) throws {
    let deadline = ContinuousClock.now + limit
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw ConditionTimedOut(description: "\(what): not within \(limit)") }
        usleep(5_000)
    }
}
