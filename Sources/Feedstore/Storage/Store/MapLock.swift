import Foundation

/// Guards LMDB's map: every transaction of this process holds it shared; growing the map
/// (`mdb_env_set_mapsize`, which needs no open transaction in the process) takes it exclusively.
final class MapLock: @unchecked Sendable {
    private var lock = pthread_rwlock_t()

    init() { pthread_rwlock_init(&lock, nil) }
    deinit { pthread_rwlock_destroy(&lock) }

    func withShared<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(&lock)
        defer { pthread_rwlock_unlock(&lock) }
        return try body()
    }

    func withExclusive<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(&lock)
        defer { pthread_rwlock_unlock(&lock) }
        return try body()
    }
}
