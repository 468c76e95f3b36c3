import AMF0

// Answers a server session sends, shaped like nginx-rtmp's and SRS's so that ffmpeg, OBS and
// librtmp (rtmpdump) accept them: ffmpeg looks for `_result` by transaction id and for the
// `code` string of `onStatus`; librtmp additionally reads `fmsVer`/`capabilities`.

extension CommandMessage {
    /// The server version nginx-rtmp and SRS report; some clients parse it.
    public static let serverVersion = "FMS/3,0,1,123"
    /// The capabilities value nginx-rtmp and SRS report.
    public static let serverCapabilities: Double = 31

    /// `_result` for `connect`: properties (`fmsVer`, `capabilities`, `mode`) and information
    /// (`level` status, `code` NetConnection.Connect.Success, `description`, `objectEncoding`,
    /// echoing the client's).
    ///
    /// `capsEx`, for a client that sent its own (Enhanced RTMP v2), is the server's: the
    /// capabilities both sides have.
    public static func connectResult(
        transactionID: Double = 1,
        objectEncoding: Double = 0,
        capsEx: UInt32? = nil,
        description: String = "Connection succeeded."
    ) -> CommandMessage {
        var properties = [
            AMF0Property("fmsVer", .string(Self.serverVersion)),
            AMF0Property("capabilities", .number(Self.serverCapabilities)),
            AMF0Property("mode", .number(1)),
        ]
        if let capsEx { properties.append(AMF0Property("capsEx", .number(Double(capsEx)))) }
        return CommandMessage(
            name: "_result",
            transactionID: transactionID,
            commandObject: .object(properties),
            arguments: [
                .object([
                    AMF0Property("level", .string(StatusLevel.status.rawValue)),
                    AMF0Property("code", .string(StatusCode.connectSuccess.rawValue)),
                    AMF0Property("description", .string(description)),
                    AMF0Property("objectEncoding", .number(objectEncoding)),
                ])
            ]
        )
    }

    /// Enhanced RTMP v2's reconnect request: a NetConnection `onStatus` (transaction 0, null
    /// command object) whose info object carries `tcUrl` when the client should go to
    /// another server, and nothing when its own URL now leads elsewhere.
    public static func reconnectRequest(tcUrl: String?, description: String) -> CommandMessage {
        var info = [
            AMF0Property("level", .string(StatusLevel.status.rawValue)),
            AMF0Property("code", .string(StatusCode.connectReconnectRequest.rawValue)),
            AMF0Property("description", .string(description)),
        ]
        if let tcUrl { info.append(AMF0Property("tcUrl", .string(tcUrl))) }
        return CommandMessage(name: "onStatus", transactionID: 0, commandObject: .null, arguments: [.object(info)])
    }

    /// `_error` for `connect` (e.g. an unknown app or a failed token check).
    public static func connectError(
        transactionID: Double = 1,
        code: StatusCode = .connectRejected,
        description: String
    ) -> CommandMessage {
        CommandMessage(
            name: "_error",
            transactionID: transactionID,
            commandObject: .null,
            arguments: [
                .object([
                    AMF0Property("level", .string(StatusLevel.error.rawValue)),
                    AMF0Property("code", .string(code.rawValue)),
                    AMF0Property("description", .string(description)),
                ])
            ]
        )
    }

    /// `_result` for `createStream`: null, then the new message stream id.
    public static func createStreamResult(transactionID: Double, streamID: UInt32) -> CommandMessage {
        CommandMessage(name: "_result", transactionID: transactionID, commandObject: .null, arguments: [.number(Double(streamID))])
    }

    /// A generic `_result` (e.g. for `releaseStream` or `FCPublish`, which nginx-rtmp answers with
    /// `_result` null undefined when the transaction id is non-zero).
    public static func result(transactionID: Double, arguments: [AMF0Value] = [.undefined]) -> CommandMessage {
        CommandMessage(name: "_result", transactionID: transactionID, commandObject: .null, arguments: arguments)
    }

    /// `onStatus` (transaction id 0, null command object) with an info object of `level`, `code`,
    /// `description` and, when given, `details` (nginx-rtmp puts the stream name there) and
    /// `clientid`. Send it on the NetStream's message stream.
    public static func onStatus(
        level: StatusLevel = .status,
        code: StatusCode,
        description: String,
        details: String? = nil,
        clientID: String? = nil
    ) -> CommandMessage {
        var info = [
            AMF0Property("level", .string(level.rawValue)),
            AMF0Property("code", .string(code.rawValue)),
            AMF0Property("description", .string(description)),
        ]
        if let details {
            info.append(AMF0Property("details", .string(details)))
        }
        if let clientID {
            info.append(AMF0Property("clientid", .string(clientID)))
        }
        return CommandMessage(name: "onStatus", transactionID: 0, commandObject: .null, arguments: [.object(info)])
    }

    /// `onFCPublish` (answer to `FCPublish`, expected by FMLE-style encoders): null, then
    /// `code` NetStream.Publish.Start and `description` the stream name.
    public static func onFCPublish(streamName: String, code: StatusCode = .publishStart) -> CommandMessage {
        CommandMessage(
            name: "onFCPublish",
            transactionID: 0,
            commandObject: .null,
            arguments: [
                .object([
                    AMF0Property("code", .string(code.rawValue)),
                    AMF0Property("description", .string(streamName)),
                ])
            ]
        )
    }

    /// `onFCUnpublish` (answer to `FCUnpublish`).
    public static func onFCUnpublish(streamName: String, code: StatusCode = .unpublishSuccess) -> CommandMessage {
        CommandMessage(
            name: "onFCUnpublish",
            transactionID: 0,
            commandObject: .null,
            arguments: [
                .object([
                    AMF0Property("code", .string(code.rawValue)),
                    AMF0Property("description", .string(streamName)),
                ])
            ]
        )
    }

    /// `onBWDone`, which Flash Media Server sends after `connect`; librtmp answers it with `_checkbw`.
    public static func onBWDone() -> CommandMessage {
        CommandMessage(name: "onBWDone", transactionID: 0, commandObject: .null, arguments: [])
    }
}
