import Coordinator
import Foundation
import Hummingbird
import NIOCore

/// Refuses every request without `Authorization: Bearer <token>` matching the configured
/// token, with 401 and `WWW-Authenticate: Bearer`. The comparison takes the same time
/// wherever the given token differs (see `ConstantTime.equalSecrets`). An empty configured
/// token refuses everything: an unset secret must not open the API.
struct BearerTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    private let token: String

    init(token: String) {
        self.token = token
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // Each refusal says which it is: an operator's first question is whether the node
        // has a token at all, or the one sent is wrong.
        let refusal: String
        if token.isEmpty {
            refusal = "no admin token is configured on this node (--admin-token or ESTUARY_ADMIN_TOKEN): its API is closed"
        } else if let presented = Self.bearerToken(request.headers[.authorization]) {
            guard !ConstantTime.equalSecrets(presented, token) else { return try await next(request, context) }
            refusal = "the bearer token is not this node's admin token"
        } else {
            refusal = "a bearer token is required (Authorization: Bearer <admin token>)"
        }
        var response = AdminAPIErrors.response(.unauthorized, refusal)
        response.headers[.wwwAuthenticate] = "Bearer realm=\"estuary\""
        return response
    }

    /// The token of an `Authorization: Bearer …` value (the scheme is case-insensitive, as
    /// RFC 9110 §11.1 says).
    static func bearerToken(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
