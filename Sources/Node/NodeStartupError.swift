/// Why a node could not start; one line for the operator, and a non-zero exit.
enum NodeStartupError: Error, CustomStringConvertible {
    case cannotListen(String, String, flag: String, String)

    var description: String {
        switch self {
        case .cannotListen(let listener, let address, let flag, let reason):
            "cannot listen for \(listener) on \(address): \(reason) (choose another port with \(flag))"
        }
    }
}
