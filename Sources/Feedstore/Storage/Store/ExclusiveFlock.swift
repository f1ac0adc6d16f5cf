import Foundation

/// Exclusive `flock`s taken with patience. A child that another thread is forking holds a copy
/// of every descriptor of this process until it execs, and with them the lock of a file this
/// process has just closed; so a lock found held is tried again for a moment before its holder
/// counts as another process.
package enum ExclusiveFlock {
    /// Takes an exclusive lock on `descriptor`, trying again every millisecond for up to
    /// `patience` while `mayBeTransient()` says the holder may be such a child. False when the
    /// lock stays held.
    package static func take(_ descriptor: Int32, patience: Duration, whileTransient mayBeTransient: () -> Bool = { true }) -> Bool {
        let deadline = ContinuousClock.now + patience
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard ContinuousClock.now < deadline, mayBeTransient() else { return false }
            usleep(1_000)
        }
        return true
    }
}
