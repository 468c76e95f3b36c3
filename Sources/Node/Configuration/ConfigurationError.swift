/// Why a node's configuration cannot be used.
enum ConfigurationError: Error, CustomStringConvertible {
    case invalidFile(String, String)
    case invalidValue(String)
    case needsBus(String)

    var description: String {
        switch self {
        case .invalidFile(let path, let why): "cannot read configuration \(path): \(why)"
        case .invalidValue(let why): "invalid configuration: \(why)"
        case .needsBus(let role): "role '\(role)' needs the cluster bus: pass --nats nats://host:4222 (or \"nats\" in the configuration file)"
        }
    }
}
