import Foundation

/// The head of LMDB's lock file (`lock.mdb`) as LMDB 0.9 lays it out when it locks with POSIX
/// mutexes: magic and format, then the last transaction id, the reader count and the reader
/// table's mutex (in that order from lock format 2, LMDB 0.9.70's; the mutex first in format 1,
/// 0.9.24's), then, at the next cache line, the writer's mutex. Mapped here, beside LMDB's own
/// map of the same file, so that ``LMDBMutexGate`` can tell a mutex whose holder died from a
/// busy one, and set it free, which LMDB's mutexes cannot do themselves when they are not
/// robust (the bundled build, for Apple's systems, which have no robust mutexes).
///
/// The descriptor stays open until the environment is closed: closing any descriptor of
/// `lock.mdb` would drop the process's `fcntl` locks on it, LMDB's included.
final class LMDBLockRegion: @unchecked Sendable {
    enum Mutex: Sendable {
        /// Held by each write transaction, from its begin to its commit or abort.
        case writer
        /// Held while a reader takes a slot of the reader table, and while dead readers' slots
        /// are cleared.
        case readers
    }

    static let magic: UInt32 = 0xBEEF_C0DE

    /// Where the fields lie in one lock format.
    struct Layout: Sendable, Equatable {
        var transaction: Int
        var readersMutex: Int
        var writerMutex: Int

        /// The layout of lock format `version` (the low 12 bits of the format field); nil for
        /// one this code does not know.
        init?(version: UInt32) {
            let size = MemoryLayout<pthread_mutex_t>.size, alignment = MemoryLayout<pthread_mutex_t>.alignment
            func aligned(_ offset: Int, _ to: Int) -> Int { (offset + to - 1) / to * to }
            let body: Int
            switch version {
            case 1:
                readersMutex = aligned(8, alignment)
                transaction = aligned(readersMutex + size, 8)
                body = transaction + 12
            case 2:
                transaction = 8
                readersMutex = aligned(20, alignment)
                body = readersMutex + size
            default:
                return nil
            }
            writerMutex = aligned(body, 64)
        }

        func offset(of mutex: Mutex) -> Int { mutex == .writer ? writerMutex : readersMutex }
        var length: Int { writerMutex + MemoryLayout<pthread_mutex_t>.size }
    }

    /// The layout of the lock file whose first eight bytes are `head`; nil when it is not one.
    static func layout(ofHead head: [UInt8]) -> Layout? {
        guard head.count >= 8 else { return nil }
        let magic = head.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
        let format = head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self) }
        return magic == Self.magic ? Layout(version: format & 0xFFF) : nil
    }

    let layout: Layout
    let path: String
    private let descriptor: Int32
    private let base: UnsafeMutableRawPointer

    /// Maps the head of the lock file at `path`; nil when the file is not a lock file of a
    /// known layout (then nothing is mapped).
    init?(path: String) {
        let opened = open(path, O_RDWR | O_CLOEXEC)
        guard opened >= 0 else { return nil }
        var head = [UInt8](repeating: 0, count: 8)
        var status = stat()
        guard pread(opened, &head, 8, 0) == 8, let layout = Self.layout(ofHead: head),
              fstat(opened, &status) == 0, Int(status.st_size) >= layout.length,
              let mapped = mmap(nil, layout.length, PROT_READ | PROT_WRITE, MAP_SHARED, opened, 0),
              mapped != UnsafeMutableRawPointer(bitPattern: -1) else {
            close(opened)
            return nil
        }
        self.path = path
        self.layout = layout
        self.descriptor = opened
        self.base = mapped
    }

    /// Unmaps the head and closes the descriptor: only once LMDB's environment is closed.
    deinit {
        munmap(base, layout.length)
        close(descriptor)
    }

    private func pointer(_ mutex: Mutex) -> UnsafeMutablePointer<pthread_mutex_t> {
        (base + layout.offset(of: mutex)).assumingMemoryBound(to: pthread_mutex_t.self)
    }

    /// Whether `mutex` is locked (by anyone, this process included), found by trying it.
    func isLocked(_ mutex: Mutex) -> Bool {
        let lock = pointer(mutex)
        switch pthread_mutex_trylock(lock) {
        case 0:
            pthread_mutex_unlock(lock)
            return false
        default:
            return true
        }
    }

    /// Makes `mutex` a new, unlocked one, as LMDB makes it when the first process opens the
    /// environment. Only for a mutex whose holder is dead and that no one else waits for: the
    /// caller holds the gate every process takes before it.
    func reinitialize(_ mutex: Mutex) {
        let lock = pointer(mutex)
        memset(lock, 0, MemoryLayout<pthread_mutex_t>.size)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_setpshared(&attributes, Int32(PTHREAD_PROCESS_SHARED))
        pthread_mutex_init(lock, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    /// The last transaction id LMDB keeps in the lock file, from which the next writer counts.
    var lastTransaction: UInt64 {
        get { (base + layout.transaction).assumingMemoryBound(to: UInt64.self).pointee }
        set { (base + layout.transaction).assumingMemoryBound(to: UInt64.self).pointee = newValue }
    }
}
