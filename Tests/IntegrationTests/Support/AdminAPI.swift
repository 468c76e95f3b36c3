import Foundation

extension NodeProcess {
    /// `GET path` on this node's admin API (the coordinator's) with a bearer token (none:
    /// no `Authorization` header), as the status and the JSON object of the body (empty
    /// when the body is not one).
    func admin(_ path: String, token: String?) async throws -> (Int, [String: Any]) {
        let response = try await HTTPClient.get(port: self.adminPort, path: path, headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:], timeout: .seconds(5))
        let json = (try? JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any]) ?? [:]
        return (response.status, json)
    }
}
