import Foundation
import Hummingbird
import NIOCore
import ServiceLifecycle

/// One of the node's HTTP listeners (playback, HTTPS, the admin plane) as a service: a port
/// it cannot bind ends the start with one line naming the listener, the address and the flag
/// that moves it, rather than Hummingbird's error of an unnamed socket.
struct HTTPListener<Application: ApplicationProtocol>: Service {
    let name: String
    let address: String
    let flag: String
    let application: Application

    func run() async throws {
        do {
            try await application.run()
        } catch let error as IOError where [EADDRINUSE, EACCES, EADDRNOTAVAIL].contains(error.errnoCode) {
            throw NodeStartupError.cannotListen(name, address, flag: flag, NodeRuntime.reason(error))
        }
    }
}
