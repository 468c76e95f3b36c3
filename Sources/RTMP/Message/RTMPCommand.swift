import AMF0

/// A command decoded once from a ``CommandMessage`` (RTMP specification 7.2), so the session
/// layer switches over cases instead of strings.
///
/// Stream names are kept raw: they may carry a query string (`demo?key=abc`).
public enum RTMPCommand: Sendable, Equatable {
    /// `connect`.
    case connect(ConnectCommand)
    /// `releaseStream` (FMLE-style, sent by OBS and ffmpeg before publishing).
    case releaseStream(transactionID: Double, streamName: String)
    /// `FCPublish` (FMLE-style); answer with `onFCPublish`.
    case fcPublish(transactionID: Double, streamName: String)
    /// `FCUnpublish`.
    case fcUnpublish(transactionID: Double, streamName: String)
    /// `createStream`; answer with `_result` and a stream id.
    case createStream(transactionID: Double)
    /// `publish`: stream name and type (`live`, `record`, `append`; `live` when absent).
    case publish(transactionID: Double, streamName: String, publishType: String)
    /// `play`: start (-2 live or recorded, -1 live only, >= 0 seconds offset), duration (-1 all) and reset.
    case play(transactionID: Double, streamName: String, start: Double, duration: Double, reset: Bool)
    /// `deleteStream` with the message stream id to delete.
    case deleteStream(transactionID: Double, streamID: Double)
    /// `closeStream`.
    case closeStream(transactionID: Double)
    /// `getStreamLength` (sent by some players before `play`).
    case getStreamLength(transactionID: Double, streamName: String)
    /// `pause`: true to pause, and the stream time in milliseconds.
    case pause(transactionID: Double, isPaused: Bool, milliseconds: Double)
    /// `receiveAudio`.
    case receiveAudio(Bool)
    /// `receiveVideo`.
    case receiveVideo(Bool)
    /// `_result`: the command object followed by the arguments.
    case result(transactionID: Double, values: [AMF0Value])
    /// `_error`: the command object followed by the arguments.
    case error(transactionID: Double, values: [AMF0Value])
    /// `onStatus`: the info object (level, code, description).
    case onStatus(transactionID: Double, info: AMF0Value)
    /// Any other command, by name (e.g. `_checkbw`, `onBWDone`, `FCSubscribe`).
    case unknown(String)

    /// Decodes `command`. Throws when a command the session acts on lacks a required argument.
    public init(_ command: CommandMessage) throws(MessageError) {
        let name = command.name
        let transactionID = command.transactionID
        let arguments = command.arguments

        func string(at position: Int) throws(MessageError) -> String {
            guard position < arguments.count, let text = arguments[position].stringValue else {
                throw .invalidArgument(command: name, position: position)
            }
            return text
        }
        // FMLE-style helper commands are advisory; a missing name is not worth closing the connection.
        func optionalString(at position: Int) -> String {
            guard position < arguments.count else { return "" }
            return arguments[position].stringValue ?? ""
        }
        func number(at position: Int) -> Double? {
            guard position < arguments.count else { return nil }
            return arguments[position].numberValue
        }
        func boolean(at position: Int) -> Bool? {
            guard position < arguments.count else { return nil }
            return arguments[position].booleanValue
        }

        switch name {
        case "connect":
            self = .connect(ConnectCommand(command))
        case "releaseStream":
            self = .releaseStream(transactionID: transactionID, streamName: optionalString(at: 0))
        case "FCPublish":
            self = .fcPublish(transactionID: transactionID, streamName: optionalString(at: 0))
        case "FCUnpublish":
            self = .fcUnpublish(transactionID: transactionID, streamName: optionalString(at: 0))
        case "createStream":
            self = .createStream(transactionID: transactionID)
        case "publish":
            let streamName = try string(at: 0)
            let publishType = arguments.count > 1 ? (arguments[1].stringValue ?? "live") : "live"
            self = .publish(transactionID: transactionID, streamName: streamName, publishType: publishType)
        case "play":
            self = .play(
                transactionID: transactionID,
                streamName: try string(at: 0),
                start: number(at: 1) ?? -2,
                duration: number(at: 2) ?? -1,
                reset: boolean(at: 3) ?? false
            )
        case "deleteStream":
            guard let streamID = number(at: 0) else { throw .invalidArgument(command: name, position: 0) }
            self = .deleteStream(transactionID: transactionID, streamID: streamID)
        case "closeStream":
            self = .closeStream(transactionID: transactionID)
        case "getStreamLength":
            self = .getStreamLength(transactionID: transactionID, streamName: optionalString(at: 0))
        case "pause":
            guard let isPaused = boolean(at: 0) else { throw .invalidArgument(command: name, position: 0) }
            self = .pause(transactionID: transactionID, isPaused: isPaused, milliseconds: number(at: 1) ?? 0)
        case "receiveAudio":
            self = .receiveAudio(boolean(at: 0) ?? true)
        case "receiveVideo":
            self = .receiveVideo(boolean(at: 0) ?? true)
        case "_result":
            self = .result(transactionID: transactionID, values: [command.commandObject] + arguments)
        case "_error":
            self = .error(transactionID: transactionID, values: [command.commandObject] + arguments)
        case "onStatus":
            self = .onStatus(transactionID: transactionID, info: arguments.first ?? command.commandObject)
        default:
            self = .unknown(name)
        }
    }
}
