internal import CFeedstoreCrypto

/// SHA-256, fed in pieces: the digest an Object Store keeps of each object. OpenSSL's, which
/// uses the processor's SHA instructions: snapshots are hashed as fast as they are read.
/// The only user of the crypto C module.
final class SHA256 {
    private let context: OpaquePointer

    init() {
        context = EVP_MD_CTX_new()
        EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    func update<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let hashed: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            _ = EVP_DigestUpdate(context, buffer.baseAddress, buffer.count)
        }
        if hashed == nil { update(Array(bytes)) }
    }

    /// The digest of everything given to ``update(_:)``; the hash cannot be fed afterwards.
    func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        return digest
    }
}
