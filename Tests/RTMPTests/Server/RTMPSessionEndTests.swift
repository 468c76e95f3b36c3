import Media
import NIOCore
import Session
import Synchronization
import Testing

@testable import RTMP

/// Each way an RTMP session ends is told to its client before the close, and to observers
/// with its own reason: a takeover, an operator's kick, a shutdown, a deleted stream, the
/// stream's end. The connections run on `EmbeddedChannel`s.
@Suite("An RTMP client is told why its session ends")
struct RTMPSessionEndTests {
    typealias Admission = RTMPSessionPairingTests.RecordingAdmission

    static func publisher(_ admission: Admission, _ name: String = "a", address: String = "192.0.2.7") throws -> EmbeddedRTMPConnection {
        let connection = try EmbeddedRTMPConnection(admission: admission, address: address)
        connection.handshake()
        connection.connect()
        connection.createStream()
        connection.publish(name)
        return connection
    }

    static func viewer(_ admission: Admission, _ name: String = "a") throws -> EmbeddedRTMPConnection {
        let connection = try EmbeddedRTMPConnection(admission: admission, address: "192.0.2.9")
        connection.handshake()
        connection.connect()
        connection.createStream()
        connection.play(name)
        return connection
    }

    @Test func aTakeoverTellsTheOldPublisherAndEndsItsSessionAsTakenOver() throws {
        let admission = Admission()
        let old = try Self.publisher(admission)
        #expect(old.statusCodes == ["NetStream.Publish.Start"])
        let new = try Self.publisher(admission, address: "192.0.2.8")
        #expect(new.statusCodes == ["NetStream.Publish.Start"])
        old.settle()  // each connection has its own loop: the eviction runs on the old one's
        #expect(old.statusCodes == ["NetStream.Publish.Start", "NetConnection.Connect.Closed"])
        let sessions = admission.publishers.withLock { $0 }
        #expect(sessions.count == 2)
        #expect(sessions.first?.hasEnded == true && sessions.first?.endReason == .takenOver)
        #expect(sessions.last?.hasEnded == false)
        old.advance(.seconds(1))  // the linger that lets an encoder read the reason
        #expect(!old.isOpen)
        #expect(new.isOpen)
    }

    @Test func aKickedViewerAndPublisherAreToldAndEndAsKicked() throws {
        let admission = Admission()
        let publisher = try Self.publisher(admission)
        let viewer = try Self.viewer(admission)
        #expect(viewer.statusCodes.contains("NetStream.Play.Start"))
        let watching = try #require(admission.viewers.withLock { $0.first })
        watching.kick("enough")
        viewer.settle()
        #expect(viewer.statusCodes.last == "NetStream.Play.Stop")
        #expect(watching.hasEnded && watching.endReason == .kicked("enough"))
        #expect(!viewer.isOpen)

        let publishing = try #require(admission.publishers.withLock { $0.first })
        publishing.kick("enough")
        publisher.settle()
        #expect(publisher.statusCodes.last == "NetConnection.Connect.Closed")
        #expect(publishing.hasEnded && publishing.endReason == .kicked("enough"))
        publisher.advance(.seconds(1))
        #expect(!publisher.isOpen)
    }

    @Test func aShutdownTellsPublisherAndViewerAndEndsBothAsShutdown() throws {
        let admission = Admission()
        let publisher = try Self.publisher(admission)
        let viewer = try Self.viewer(admission)
        viewer.shutDown()
        #expect(viewer.statusCodes.last == "NetStream.Play.UnpublishNotify")
        #expect(admission.viewers.withLock { $0.first?.endReason } == .shutdown)
        publisher.shutDown()
        #expect(publisher.statusCodes.last == "NetStream.Unpublish.Success")
        #expect(admission.publishers.withLock { $0.first?.endReason } == .shutdown)
    }

    @Test func aDeletedStreamEndsItsSessionAsLeftAndTheConnectionMayPublishAgain() throws {
        let admission = Admission()
        let publisher = try Self.publisher(admission)
        publisher.deleteStream()
        let first = try #require(admission.publishers.withLock { $0.first })
        #expect(first.hasEnded && first.endReason == .left)
        #expect(publisher.isOpen)
        publisher.createStream()
        publisher.publish("a")
        #expect(publisher.statusCodes == ["NetStream.Publish.Start", "NetStream.Publish.Start"])
        let sessions = admission.publishers.withLock { $0 }
        #expect(sessions.count == 2 && sessions.last?.hasEnded == false)
        #expect(sessions.first?.sessionID != sessions.last?.sessionID)
    }

    @Test func theStreamsEndEndsItsViewersAsStreamEnded() throws {
        let admission = Admission()
        let publisher = try Self.publisher(admission)
        let viewer = try Self.viewer(admission)
        let hub = try #require(admission.publishers.withLock { $0.first?.hub })
        hub.end()
        viewer.settle()
        #expect(viewer.statusCodes.last == "NetStream.Play.UnpublishNotify")
        #expect(admission.viewers.withLock { $0.first?.endReason } == .streamEnded)
        #expect(!viewer.isOpen)
        _ = publisher
    }
}
