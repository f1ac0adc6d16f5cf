extension IndexSchema {
    /// The record's entry key in `keys` (a range of this index), or nil when it has none there:
    /// its one key, or for a text index the key of the word the range lists.
    func key(of fields: some TopLevelFields, primaryKey: [UInt8], in keys: KeyRange) throws -> [UInt8]? {
        guard isText else { return try key(of: fields, primaryKey: primaryKey).flatMap { key in keys.contains(key) ? key : nil } }
        return try self.keys(of: fields, primaryKey: primaryKey).first { keys.contains($0) }
    }
}
