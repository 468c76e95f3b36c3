import Crypto
import Foundation

/// Makes stream keys and their stored form: SHA-256(salt ‖ key) with a 16-byte random salt
/// per key, so equal keys never share a hash and a stolen file yields no key.
///
/// Keys are 32 random bytes (256 bits) in base64url without padding: 43 characters of
/// `[A-Za-z0-9_-]`, safe in an RTMP URL and a stream name. With that much entropy a plain
/// salted SHA-256 is enough; a slow password hash would only slow down every publish.
enum StreamKeyHasher {
    static let saltBytes = 16

    /// A new random key.
    static func makeKey() -> String {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        return bytes.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A new random salt.
    static func makeSalt() -> Data {
        SymmetricKey(size: SymmetricKeySize(bitCount: saltBytes * 8)).withUnsafeBytes { Data($0) }
    }

    static func hash(key: String, salt: Data) -> Data {
        var hasher = SHA256()
        hasher.update(data: salt)
        hasher.update(data: Data(key.utf8))
        return Data(hasher.finalize())
    }

    /// Whether `key` hashes to `expected` with `salt`, comparing every byte whatever the
    /// first difference (no early exit a timing attack could measure).
    static func matches(key: String, salt: Data, expected: Data) -> Bool {
        ConstantTime.equals(hash(key: key, salt: salt), expected)
    }
}

/// Comparisons whose duration does not depend on where the inputs differ.
public enum ConstantTime {
    /// Compares all bytes of equal-length inputs; inputs of different lengths are unequal
    /// (callers compare digests, whose length is public).
    public static func equals(_ lhs: Data, _ rhs: Data) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) {
            difference |= left ^ right
        }
        return difference == 0
    }

    /// Compares two secrets of any length through their SHA-256 digests, so neither the
    /// position of the first difference nor the expected length leaks.
    public static func equalSecrets(_ lhs: String, _ rhs: String) -> Bool {
        equals(Data(SHA256.hash(data: Data(lhs.utf8))), Data(SHA256.hash(data: Data(rhs.utf8))))
    }
}
