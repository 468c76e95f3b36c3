// The admin API's Swift side is generated at build time by swift-openapi-generator from
// `openapi.yaml`, a link to docs/openapi.yaml: `Operations`, `Components` and the server's
// `APIProtocol` with `registerHandlers(on:serverURL:)`. The node implements `APIProtocol`
// (`NodeAdminAPI`); the coordinator answers the cluster's operations (`CoordinatorAdminAPI`).
// Nothing else hand-written lives here: the target builds with warnings suppressed, for the
// generator's unused `public import`s.

/// The refusals the document lists, each `{"error": message}`.
public protocol ErrorResponse {
    static func saying(_ message: String) -> Self
}

extension Components.Responses.BadRequest: ErrorResponse {
    public static func saying(_ message: String) -> Self { .init(body: .json(.init(error: message))) }
}

extension Components.Responses.NotFound: ErrorResponse {
    public static func saying(_ message: String) -> Self { .init(body: .json(.init(error: message))) }
}

extension Components.Responses.NotServed: ErrorResponse {
    public static func saying(_ message: String) -> Self { .init(body: .json(.init(error: message))) }
}

extension Components.Responses.PayloadTooLarge: ErrorResponse {
    public static func saying(_ message: String) -> Self { .init(body: .json(.init(error: message))) }
}
