extension NodeActorSystem {
    /// Settings of a `NodeActorSystem`.
    public struct Configuration: Sendable {
        /// How long a remote call waits for its reply, unless the calling task sets
        /// `NodeActorSystem.$callTimeout`. Control-plane calls answer in milliseconds on a
        /// healthy cluster; 2 s is well above that and still below the coordinator's 3 s
        /// dead-node threshold, so a caller learns of a dead peer before it is replaced.
        public var defaultCallTimeout: Duration = .seconds(2)
        /// Incoming calls executing at once; more are refused with `overloaded`. Each call
        /// is a Task, so this bounds the tasks a flood of requests can create.
        public var maxConcurrentCalls: Int = 256

        public init(defaultCallTimeout: Duration = .seconds(2), maxConcurrentCalls: Int = 256) {
            self.defaultCallTimeout = defaultCallTimeout
            self.maxConcurrentCalls = maxConcurrentCalls
        }
    }
}
