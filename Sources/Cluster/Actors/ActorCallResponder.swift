import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore

/// Answers one incoming call exactly once, on the request's reply subject. The result
/// handler and the receive path both go through it, so a call that fails after its method
/// already answered cannot send a second reply.
final class ActorCallResponder: Sendable {
    private let bus: any Bus
    private let request: BusMessage
    private let version: UInt16
    private let metricsFactory: any MetricsFactory
    private let logger: Logger
    private let answered = NIOLockedValueBox(false)

    init(bus: any Bus, request: BusMessage, version: UInt16, metricsFactory: any MetricsFactory, logger: Logger) {
        self.bus = bus
        self.request = request
        self.version = version
        self.metricsFactory = metricsFactory
        self.logger = logger
    }

    /// Counts the rejection and answers it when there is a reply subject.
    func reject(_ reason: ActorCallRejection, _ detail: String) {
        ActorCallMetrics.rejected(reason, factory: metricsFactory)
        logger.debug("actor call rejected", metadata: ["subject": "\(request.subject)", "reason": "\(reason.rawValue)", "detail": "\(detail)"])
        reply(.rejected(reason: reason, detail: detail))
    }

    func reply(_ outcome: ActorReplyEnvelope.Outcome) {
        guard request.replySubject != nil else { return }
        let first = answered.withLockedValue { answered in
            defer { answered = true }
            return !answered
        }
        guard first else { return }
        do {
            guard let payload = ActorReplyEnvelope(version: version, outcome: outcome).encoded() else {
                throw NodeActorSystemError.malformedMessage("cannot encode reply")
            }
            try bus.respond(to: request, payload: payload)
        } catch {
            // Most likely a result above the bus's max payload: tell the caller instead of
            // letting it time out.
            logger.warning("cannot send actor reply", metadata: ["subject": "\(request.subject)", "error": "\(error)"])
            let fallback = ActorReplyEnvelope(
                version: version,
                outcome: .thrown(RemoteErrorDescription(type: String(reflecting: NodeActorSystemError.self), message: "cannot send reply: \(error)"))
            )
            if let payload = fallback.encoded() {
                try? bus.respond(to: request, payload: payload)
            }
        }
    }
}
