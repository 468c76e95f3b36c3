import Foundation
import Hummingbird
import NIOCore

/// JSON bodies of the admin API: ISO 8601 dates, sorted keys (stable output for operators'
/// scripts and diffs), and errors as `{"error": "…"}`.
enum AdminJSON {
    /// The largest request body read; the API's bodies are a few dozen bytes.
    static let maxRequestBytes = 16 * 1024

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    static func response(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try encoder().encode(value)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
    }

    struct ErrorBody: Encodable {
        var error: String
    }

    static func error(status: HTTPResponse.Status, message: String) -> Response {
        // Encoding a struct of one String cannot fail; the fallback keeps the status anyway.
        (try? response(ErrorBody(error: message), status: status)) ?? Response(status: status)
    }

    /// Decodes a JSON request body of at most `maxRequestBytes`.
    static func decode<Value: Decodable>(_ type: Value.Type, from request: Request) async throws -> Value? {
        var request = request
        guard let body = try? await request.collectBody(upTo: maxRequestBytes) else { return nil }
        return try? JSONDecoder().decode(Value.self, from: Data(body.readableBytesView))
    }
}
