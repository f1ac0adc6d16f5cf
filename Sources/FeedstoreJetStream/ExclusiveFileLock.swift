import Foundation

/// An exclusive lock held by this process for the lock's life: `flock` on a file, which the
/// kernel drops when the process dies, killed or not. One shipper per store and stream, one
/// follower per replica.
final class ExclusiveFileLock {
    private let descriptor: Int32

    /// Takes the lock on `path`, or throws `refusal(reason)`.
    init(path: String, refusal: (String) -> JetStreamError) throws {
        descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw refusal("cannot open \(path): \(String(cString: strerror(errno)))") }
        // A child that another thread is forking holds a copy of the last holder's descriptor,
        // and so its lock, until it execs: retry for a moment before refusing.
        let deadline = ContinuousClock.now + .milliseconds(250)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard ContinuousClock.now < deadline else {
                close(descriptor)
                throw refusal("another process holds \(path)")
            }
            usleep(5_000)
        }
    }

    deinit { close(descriptor) }
}
