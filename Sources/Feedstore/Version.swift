/// This library's version (semantic versioning), as `storectl --version` prints it.
public let feedstoreVersion = "0.3.0"
