import Distributed

@testable import Cluster

/// A Codable value crossing the bus as argument and result.
struct Greeting: Codable, Equatable, Sendable {
    var text: String
    var count: Int
}

/// Thrown by `Greeter.refuse`; Codable so that a caller may register it.
enum GreeterError: Error, Codable, Equatable {
    case refused(String)
}

/// The distributed actor of the NodeActorSystem tests: one method per kind of call.
distributed actor Greeter {
    typealias ActorSystem = NodeActorSystem

    private var touches = 0

    distributed func greet(_ name: String) -> String {
        "hello \(name)"
    }

    distributed func answer(_ greeting: Greeting, times: Int) -> Greeting {
        Greeting(text: greeting.text.uppercased(), count: greeting.count * times)
    }

    distributed func refuse(_ reason: String) throws -> String {
        throw GreeterError.refused(reason)
    }

    distributed func echo<Value: Codable & Sendable>(_ value: Value) -> Value {
        value
    }

    distributed func touch() {
        touches += 1
    }

    distributed func touchCount() -> Int {
        touches
    }

    distributed func sleep(milliseconds: Int) async throws -> String {
        try await Task.sleep(for: .milliseconds(milliseconds))
        return "woke"
    }
}
