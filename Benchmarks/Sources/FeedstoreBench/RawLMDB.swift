import CLMDBPeer
import Feedstore
import Foundation

/// The physical limit the peers are measured against: LMDB through its C API, no Feedstore logic.
/// Keys are 8-byte big-endian integers (memcmp order is numeric order).
enum RawLMDB {
    static func check(_ code: Int32, _ operation: String = "raw LMDB") throws {
        if code != 0 { throw LMDBError(code: code, operation: operation) }
    }

    /// An environment in `directory` (created), with room for `databases` named databases.
    static func open(_ directory: String, mapSize: Int = 8 << 30, databases: Int = 8, flags: Int32 = MDB_NOSYNC) throws -> OpaquePointer {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var env: OpaquePointer?
        try check(mdb_env_create(&env))
        try check(mdb_env_set_mapsize(env, mapSize))
        try check(mdb_env_set_maxdbs(env, MDB_dbi(databases)))
        try check(mdb_env_open(env, directory, UInt32(flags | MDB_NOTLS), 0o600), "mdb_env_open")
        return env!
    }

    static func database(_ env: OpaquePointer, _ name: String) throws -> MDB_dbi {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, 0, &txn))
        var dbi: MDB_dbi = 0
        try check(mdb_dbi_open(txn, name, UInt32(MDB_CREATE), &dbi))
        try check(mdb_txn_commit(txn))
        return dbi
    }

    /// Puts `value` under the integer `key`.
    static func put(_ txn: OpaquePointer?, _ dbi: MDB_dbi, key: UInt64, value: UnsafeMutableRawBufferPointer) throws {
        var big = key.bigEndian
        try withUnsafeMutableBytes(of: &big) { keyBytes in
            var k = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
            var v = MDB_val(mv_size: value.count, mv_data: value.baseAddress)
            try check(mdb_put(txn, dbi, &k, &v, 0), "mdb_put")
        }
    }

    /// Puts `value` under `key`, both given as bytes.
    static func put(_ txn: OpaquePointer?, _ dbi: MDB_dbi, key: [UInt8], value: [UInt8], flags: UInt32 = 0) throws {
        // LMDB does not write through the pointers it is given for a put.
        try key.withUnsafeBytes { keyBytes in
            try value.withUnsafeBytes { valueBytes in
                var k = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var v = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                try check(mdb_put(txn, dbi, &k, &v, flags), "mdb_put")
            }
        }
    }

    /// Positions `cursor` at the first key at or after `key`; whether there is one.
    static func seek(_ cursor: OpaquePointer?, atOrAfter key: UInt64) -> Bool {
        var big = key.bigEndian
        return withUnsafeMutableBytes(of: &big) { keyBytes in
            var k = MDB_val(mv_size: 8, mv_data: keyBytes.baseAddress)
            var v = MDB_val()
            return mdb_cursor_get(cursor, &k, &v, MDB_SET_RANGE) == 0
        }
    }
}
