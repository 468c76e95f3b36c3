import AsyncHTTPClient
import Logging
import Metrics
import NIOCore
import NIOHTTP1

/// Sends one webhook: POSTs its JSON body, tries again on no answer or a 5xx (100 ms ×
/// attempt apart, `HookEndpoint.retries` times), and says what came of it. It runs in the
/// admission's Task, never on an event loop, so a hook server that is down or slow holds up
/// only the session it decides; the admission's own timeout bounds even a bad configuration.
public struct HookCaller: Sendable {
    public enum Answer: Sendable, Equatable {
        /// A 2xx, with what its body asked for (nothing, when it has no JSON object).
        case admitted(HookInstruction)
        /// Any other status (a 5xx once the retries are spent).
        case refused(status: Int)
        /// No answer: unreachable, reset, or over the timeout, on every attempt.
        case failed(String)
    }

    let client: HTTPClient
    /// The most of an answer's body read (and then dropped).
    static let maxAnswerBytes = 64 * 1024

    public init(client: HTTPClient = .shared) {
        self.client = client
    }

    public func call(_ endpoint: HookEndpoint, _ event: HookEvent) async -> Answer {
        let body = event.encoded()
        var answer = Answer.failed("not sent")
        for attempt in 0...max(0, endpoint.retries) {
            if attempt > 0 {
                try? await Task.sleep(for: .milliseconds(100 * attempt))
            }
            let started = ContinuousClock.now
            answer = await send(endpoint, body: body)
            HookMetrics.latency(event.action).recordNanoseconds(Self.nanoseconds(ContinuousClock.now - started))
            switch answer {
            case .admitted(_):
                HookMetrics.requests(event.action, result: "admitted").increment()
                return answer
            case .refused(let status) where status < 500:
                HookMetrics.requests(event.action, result: "refused").increment()
                return answer
            case .refused, .failed:
                HookMetrics.requests(event.action, result: "failed").increment()
            }
        }
        return answer
    }

    private func send(_ endpoint: HookEndpoint, body: ByteBuffer) async -> Answer {
        var request = HTTPClientRequest(url: endpoint.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "estuary")
        request.body = .bytes(body)
        do {
            let response = try await client.execute(request, timeout: TimeAmount(endpoint.timeout))
            // Read what the backend says (bounded), so the connection can be reused.
            let answer = try? await response.body.collect(upTo: Self.maxAnswerBytes)
            let status = Int(response.status.code)
            guard (200..<300).contains(status) else { return .refused(status: status) }
            return .admitted(answer.map(HookInstruction.init(body:)) ?? HookInstruction())
        } catch {
            return .failed(Self.describe(error, timeout: endpoint.timeout))
        }
    }

    /// One line a person can read: NIO's connection errors print every address tried.
    static func describe(_ error: any Error, timeout: Duration) -> String {
        let text = "\(error)"
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout:
                return "no answer within \(timeout)"
            case .invalidURL, .emptyHost, .emptyScheme:
                return "the hook URL is not usable (\(error))"
            default:
                break
            }
        }
        if text.contains("Connection refused") { return "connection refused" }
        if text.contains("Connection reset") || text.contains("connection reset") { return "connection reset" }
        if text.contains("imeout") || text.contains("deadline") { return "no answer within \(timeout)" }
        return String(text.prefix(160))
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

enum HookMetrics {
    /// `estuary_hook_requests_total{action, result}`: admitted, refused, failed (per attempt).
    static func requests(_ action: HookAction, result: String) -> Counter {
        Counter(label: "estuary_hook_requests_total", dimensions: [("action", action.rawValue), ("result", result)])
    }

    /// `estuary_hook_latency_seconds{action}`: one attempt, request to answer.
    static func latency(_ action: HookAction) -> Metrics.Timer {
        Metrics.Timer(label: "estuary_hook_latency_seconds", dimensions: [("action", action.rawValue)], preferredDisplayUnit: .seconds)
    }

    /// `estuary_hook_dropped_total{action}`: end hooks dropped because the queue was full.
    static func dropped(_ action: HookAction) -> Counter {
        Counter(label: "estuary_hook_dropped_total", dimensions: [("action", action.rawValue)])
    }
}
