import Foundation

/// The process's one thread that waits for the operating system to report writes to files
/// (``CommitSignal``'s): one watch of the system's (``FileWatchQueue``) for every store, so a
/// process with many stores open uses one inotify instance, of the 128 Linux allows a user.
///
/// A file that does not exist yet is reported once made: its directory is watched until then.
final class FileWriteNotices: @unchecked Sendable {
    static let shared = FileWriteNotices()

    /// One caller's interest in one file.
    final class Registration: @unchecked Sendable {
        let file: String
        let directory: String
        let notice: @Sendable () -> Void
        /// Held while `notice` runs; `active` is false once unregistered.
        let running = NSLock()
        var active = true
        /// The system's watch of the file, or of the directory while the file is missing.
        var watch: FileWatchQueue.Watch?
        var watchesFile = false

        init(file: String, directory: String, notice: @escaping @Sendable () -> Void) {
            self.file = file
            self.directory = directory
            self.notice = notice
        }
    }

    private let lock = NSLock()
    private var queue: FileWatchQueue?
    private var started = false
    private var registrations: [FileWatchQueue.Watch: [Registration]] = [:]

    /// Watches `file` (or `directory` until the file exists) for `notice`; nil when the system
    /// refuses.
    func register(file: String, in directory: String, _ notice: @escaping @Sendable () -> Void) -> Registration? {
        lock.withLock {
            if queue == nil { queue = FileWatchQueue() }
            guard let queue else { return nil }
            let registration = Registration(file: file, directory: directory, notice: notice)
            guard attach(registration, to: queue) else { return nil }
            if !started {
                started = true
                NamedThread.start("fs file notices") { [self] in run(queue) }
            }
            return registration
        }
    }

    /// Stops the notices of `registration`; waits for one that is running.
    func unregister(_ registration: Registration) {
        registration.running.withLock { registration.active = false }
        lock.withLock {
            guard let watch = registration.watch else { return }
            detach(registration, from: watch)
        }
    }

    /// Watches the registration's file, else its directory. The caller holds `lock`.
    private func attach(_ registration: Registration, to queue: FileWatchQueue) -> Bool {
        if let watch = queue.watch(registration.file, forCreation: false) {
            registration.watch = watch
            registration.watchesFile = true
        } else if let watch = queue.watch(registration.directory, forCreation: true) {
            registration.watch = watch
        } else {
            return false
        }
        registrations[registration.watch!, default: []].append(registration)
        return true
    }

    private func detach(_ registration: Registration, from watch: FileWatchQueue.Watch) {
        registrations[watch]?.removeAll { $0 === registration }
        if registrations[watch]?.isEmpty == true {
            registrations[watch] = nil
            queue?.unwatch(watch)
        }
        registration.watch = nil
    }

    private func run(_ queue: FileWatchQueue) {
        while let fired = queue.wait() {
            let due: [Registration] = lock.withLock {
                var due: [Registration] = []
                for watch in fired {
                    for registration in registrations[watch] ?? [] {
                        // Made at last: watched from now on, and reported (it was just written).
                        if !registration.watchesFile, let fileWatch = queue.watch(registration.file, forCreation: false) {
                            detach(registration, from: watch)
                            registration.watch = fileWatch
                            registration.watchesFile = true
                            registrations[fileWatch, default: []].append(registration)
                        }
                        due.append(registration)
                    }
                }
                return due
            }
            for registration in due {
                registration.running.withLock { if registration.active { registration.notice() } }
            }
        }
    }
}
