import Feedstore
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
        // A forked child may hold the last holder's lock for a moment (``ExclusiveFlock``).
        guard ExclusiveFlock.take(descriptor, patience: .milliseconds(250)) else {
            close(descriptor)
            throw refusal("another process holds \(path)")
        }
    }

    deinit { close(descriptor) }
}
