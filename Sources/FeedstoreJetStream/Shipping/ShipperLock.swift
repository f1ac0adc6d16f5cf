import Feedstore
import Foundation

/// An exclusive lock on shipping one store to one stream, held by the shipper's process for its
/// life (`flock` on a file in the store's directory; the kernel drops it when the process dies,
/// killed or not).
final class ShipperLock {
    private let descriptor: Int32

    init(store: Store, stream: String) throws {
        let path = store.path + "/jetstream-\(stream).lock"
        descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw JetStreamError.anotherShipper(stream: stream, reason: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw JetStreamError.anotherShipper(stream: stream, reason: "a shipper of this store already runs (it holds \(path))")
        }
    }

    deinit { close(descriptor) }
}
