import Session

extension SessionRefusal {
    /// The `onStatus` code that answers a refused publish.
    var publishStatus: StatusCode {
        switch kind {
        case .badName, .notFound: .publishBadName
        case .denied, .unavailable: .publishDenied
        }
    }

    /// The `onStatus` code that answers a refused play.
    var playStatus: StatusCode {
        switch kind {
        case .notFound, .badName: .playStreamNotFound
        case .denied, .unavailable: .playFailed
        }
    }
}
