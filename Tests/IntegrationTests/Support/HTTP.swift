import Foundation

/// An HTTP/1.1 response as read from a raw connection: head parsed, body de-chunked.
struct HTTPResponse {
    var status: Int
    var headers: [(name: String, value: String)]
    /// The body so far (de-chunked when the response is chunked).
    var body: [UInt8]
    /// True when the body is complete: the terminating zero-size chunk arrived, or Content-Length bytes did.
    var complete: Bool

    func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var bodyText: String { String(decoding: self.body, as: UTF8.self) }

    /// Parses what has been received so far; nil while the head is incomplete. Throws on a malformed head.
    static func parse(_ bytes: [UInt8]) throws -> HTTPResponse? {
        guard let headEnd = findHeadEnd(bytes) else { return nil }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        guard !lines.isEmpty else { throw IntegrationFailure("empty HTTP head") }
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw IntegrationFailure("bad HTTP status line: \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw IntegrationFailure("bad HTTP header line: \(line)") }
            let name = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            headers.append((name, value))
        }
        var response = HTTPResponse(status: status, headers: headers, body: [], complete: false)
        let rawBody = Array(bytes[(headEnd + 4)...])
        if response.header("Transfer-Encoding")?.lowercased().contains("chunked") == true {
            let (body, complete) = try decodeChunked(rawBody)
            response.body = body
            response.complete = complete
        } else if let lengthText = response.header("Content-Length"), let length = Int(lengthText) {
            response.body = Array(rawBody.prefix(length))
            response.complete = rawBody.count >= length
        } else {
            response.body = rawBody
            response.complete = false
        }
        return response
    }

    private static func findHeadEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// Decodes a chunked body; returns the data so far and whether the last chunk was seen.
    static func decodeChunked(_ raw: [UInt8]) throws -> ([UInt8], Bool) {
        var body: [UInt8] = []
        body.reserveCapacity(raw.count)
        var index = 0
        while true {
            // Size line.
            var lineEnd = index
            while lineEnd + 1 < raw.count, !(raw[lineEnd] == 13 && raw[lineEnd + 1] == 10) {
                lineEnd += 1
            }
            guard lineEnd + 1 < raw.count else { return (body, false) }
            let line = String(decoding: raw[index..<lineEnd], as: UTF8.self)
            let sizeText = line.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                throw IntegrationFailure("bad chunk size line \"\(line)\" at body offset \(index)")
            }
            let dataStart = lineEnd + 2
            if size == 0 { return (body, true) }
            guard dataStart + size + 2 <= raw.count else {
                body.append(contentsOf: raw[dataStart..<min(raw.count, dataStart + size)])
                return (body, false)
            }
            body.append(contentsOf: raw[dataStart..<(dataStart + size)])
            guard raw[dataStart + size] == 13, raw[dataStart + size + 1] == 10 else {
                throw IntegrationFailure("chunk of \(size) bytes at body offset \(index) not followed by CRLF")
            }
            index = dataStart + size + 2
        }
    }
}

enum HTTPClient {
    /// A complete GET with `Connection: close`, bounded by `timeout`.
    static func get(port: Int, path: String, headers: [String: String] = [:], timeout: Duration = .seconds(5)) async throws -> HTTPResponse {
        try await request("GET", port: port, path: path, headers: headers, timeout: timeout)
    }

    /// Any method, with an optional body (sent with its Content-Length).
    static func request(_ method: String, port: Int, path: String, headers: [String: String] = [:], body: String? = nil, timeout: Duration = .seconds(5)) async throws -> HTTPResponse {
        let connection = try await RawConnection.connect(port: port)
        var response: HTTPResponse?
        let finished: Bool
        do {
            var extra = headers.map { "\($0.key): \($0.value)\r\n" }.joined()
            if let body { extra += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
            try await connection.send(Array("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\(extra)Connection: close\r\n\r\n\(body ?? "")".utf8))
            finished = try await eventually(timeout: timeout, interval: .milliseconds(10)) {
                let closed = connection.isClosed
                response = try HTTPResponse.parse(connection.bytes())
                return closed || response?.complete == true
            }
        } catch {
            await connection.close()
            throw error
        }
        await connection.close()
        guard let response else {
            throw IntegrationFailure("GET \(path): no complete HTTP head within \(timeout) (closed: \(connection.isClosed))")
        }
        guard finished else {
            throw IntegrationFailure("GET \(path): response not complete within \(timeout)")
        }
        return response
    }

    /// Sends a GET and returns as soon as the head has arrived (the connection stays open for
    /// streaming bodies), bounded by `timeout`.
    static func openStream(port: Int, path: String, timeout: Duration = .seconds(5)) async throws -> (RawConnection, HTTPResponse) {
        let connection = try await RawConnection.connect(port: port)
        try await connection.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8))
        var response: HTTPResponse?
        _ = try await eventually(timeout: timeout, interval: .milliseconds(10)) {
            response = try HTTPResponse.parse(connection.bytes())
            return response != nil || connection.isClosed
        }
        guard let response else {
            await connection.close()
            throw IntegrationFailure("GET \(path): no HTTP head within \(timeout) (closed: \(connection.isClosed))")
        }
        return (connection, response)
    }
}

/// An HTTP-FLV viewer on a raw connection: records every byte, parses FLV tags on demand.
final class HTTPFLVViewer: Sendable {
    let connection: RawConnection
    let path: String
    let status: Int
    let headers: [String: String]

    private init(connection: RawConnection, path: String, status: Int, headers: [String: String]) {
        self.connection = connection
        self.path = path
        self.status = status
        self.headers = headers
    }

    /// Opens `GET path`; throws unless the server answers 200.
    static func open(port: Int, path: String, timeout: Duration = .seconds(5)) async throws -> HTTPFLVViewer {
        let (connection, head) = try await HTTPClient.openStream(port: port, path: path, timeout: timeout)
        guard head.status == 200 else {
            await connection.close()
            throw IntegrationFailure("GET \(path) answered \(head.status), expected 200")
        }
        var headers: [String: String] = [:]
        for (name, value) in head.headers {
            headers[name.lowercased()] = value
        }
        return HTTPFLVViewer(connection: connection, path: path, status: head.status, headers: headers)
    }

    /// The response so far.
    func response() throws -> HTTPResponse {
        guard let response = try HTTPResponse.parse(self.connection.bytes()) else {
            throw IntegrationFailure("GET \(self.path): head vanished")
        }
        return response
    }

    /// The FLV stream received so far.
    func flv() throws -> FLVStream {
        FLVStream.parse(try self.response().body)
    }

    /// Received body bytes so far (raw, including chunk framing): cheap progress measure.
    var receivedBytes: Int { self.connection.count }

    var isClosed: Bool { self.connection.isClosed }

    /// Waits until the raw byte count grows by at least `bytes` beyond `baseline`.
    func waitForProgress(beyond baseline: Int, bytes: Int = 2000, timeout: Duration) async -> Bool {
        await eventually(timeout: timeout, interval: .milliseconds(20)) {
            self.connection.count >= baseline + bytes || self.connection.isClosed
        }
        return self.connection.count >= baseline + bytes
    }

    func close() async {
        await self.connection.close()
    }
}
