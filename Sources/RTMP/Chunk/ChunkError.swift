/// Errors thrown by ``ChunkDecoder``. Each is fatal for the connection: after one, the byte
/// stream can no longer be parsed.
public enum ChunkError: Error, Equatable, Sendable {
    /// A type 2 or 3 chunk arrived on a chunk stream id that never carried a type 0 or 1 chunk:
    /// such a header has no message length, so nothing safe can be assumed.
    case unknownChunkStream(UInt32)
    /// A message header declared a body larger than ``ChunkLimits/maxMessageSize``.
    case messageTooLarge(Int, limit: Int)
    /// Set Chunk Size announced a size above ``ChunkLimits/maxChunkSize``.
    case chunkSizeTooLarge(UInt32, limit: Int)
    /// Set Chunk Size announced 0 or a value with the top bit set (the specification reserves it).
    case invalidChunkSize(UInt32)
    /// A type 0 chunk would start chunk stream number `limit + 1`.
    case tooManyChunkStreams(limit: Int)
    /// The bytes that arrived would put more than the connection's share
    /// (``ChunkLimits/maxBufferedBytes``, or ``ChunkLimits/maxBufferedBytesWithoutMedia`` before
    /// it asks to publish) in reassembly.
    case tooManyBufferedBytes(Int, limit: Int)
    /// The bytes that arrived would put the node's connections together over the hard limit of
    /// their shared reassembly budget (``ChunkLimits/nodeBudget``).
    case nodeReassemblyBudgetExhausted(limit: Int)
    /// The node's reassembly budget ran short and this connection held the costliest unfinished
    /// messages (`held` bytes): it is the one closed (see ``ReassemblyBudget``).
    case shedByNodeBudget(held: Int)
    /// A Set Chunk Size or Abort message whose body is shorter than 4 bytes.
    case malformedControlMessage(typeID: UInt8, length: Int)
}
