import Foundation
import NIOCore

/// What a deciding hook's 2xx body may ask, as OvenMediaEngine's admission webhook allows:
/// `{"name": "other"}` publishes under another stream name of the same application;
/// `{"redirect": "rtmp://other:1935"}` (a publisher) or `{"redirect": "http://other:8080"}`
/// (a player) sends the client to another server. A body that is not such a JSON object
/// asks nothing.
public struct HookInstruction: Sendable, Equatable, Decodable {
    public var name: String?
    public var redirect: String?

    public init(name: String? = nil, redirect: String? = nil) {
        self.name = name
        self.redirect = redirect
    }

    init(body: ByteBuffer) {
        self = (try? JSONDecoder().decode(HookInstruction.self, from: Data(body.readableBytesView))) ?? HookInstruction()
    }

    /// A redirect the node can send: an rtmp(s):// or http(s):// URL of at most 1024 bytes,
    /// of visible ASCII only (it goes into a `Location` header and an AMF0 string).
    public var usableRedirect: String? {
        guard let redirect, redirect.utf8.count <= 1024, redirect.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
              let scheme = redirect.split(separator: ":", maxSplits: 1).first?.lowercased(),
              ["rtmp", "rtmps", "http", "https"].contains(scheme), redirect.contains("://") else { return nil }
        return redirect
    }
}
