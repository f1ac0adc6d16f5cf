extension Store {
    /// Runs `body` in read transactions until it has an answer: nil asks for a newer
    /// transaction (the change feed is past the one given).
    func readRetrying<R>(_ body: (ReadTransaction) throws -> R?) throws -> R {
        while true {
            if let result = try read(body) { return result }
        }
    }
}
