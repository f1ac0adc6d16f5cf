/// This library's version (semantic versioning), as `storectl --version` prints it.
public let feedstoreVersion = "0.7.0"

/// The version of LMDB the library runs on: the system's, or the one compiled in with the
/// `BundledLMDB` trait.
public let lmdbVersion = LMDBEnvironment.libraryVersion

/// How that LMDB locks between processes: with the bundled one, process-shared POSIX mutexes
/// that are not robust (what the App Sandbox allows); with Linux's system LMDB, robust ones.
public let lmdbLocking = LMDBEnvironment.lockImplementation
