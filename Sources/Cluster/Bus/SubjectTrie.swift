/// The subscriptions of a `LocalBus`, indexed by subject token, as the NATS server's
/// sublist does: a publish walks one path per matching wildcard instead of testing every
/// subscription.
struct SubjectTrie<Value: Sendable>: Sendable {
    private struct Node: Sendable {
        /// Children by literal token; the token `*` is stored here too and matched specially.
        var children: [Substring: Node] = [:]
        /// Subscriptions whose subject ends at this node.
        var values: [UInt64: Value] = [:]
        /// Subscriptions whose subject ends with `>` after this node.
        var tailValues: [UInt64: Value] = [:]

        var isEmpty: Bool { children.isEmpty && values.isEmpty && tailValues.isEmpty }
    }

    private var root = Node()
    private(set) var count = 0

    /// Adds `value` under `tokens` (a valid filter, see `Subject.filterTokens`).
    mutating func insert(_ value: Value, id: UInt64, tokens: [Substring]) {
        Self.insert(value, id: id, tokens: tokens[...], into: &root)
        count += 1
    }

    /// Removes the value added with `id` under `tokens`, and any node left empty.
    mutating func remove(id: UInt64, tokens: [Substring]) {
        if Self.remove(id: id, tokens: tokens[...], from: &root) {
            count -= 1
        }
    }

    /// Every value whose filter matches the published `tokens`.
    func matches(_ tokens: [Substring]) -> [Value] {
        var result: [Value] = []
        Self.collect(tokens[...], node: root, into: &result)
        return result
    }

    private static func insert(_ value: Value, id: UInt64, tokens: ArraySlice<Substring>, into node: inout Node) {
        guard let first = tokens.first else {
            node.values[id] = value
            return
        }
        if first == Subject.tail, tokens.count == 1 {
            node.tailValues[id] = value
            return
        }
        insert(value, id: id, tokens: tokens.dropFirst(), into: &node.children[first, default: Node()])
    }

    private static func remove(id: UInt64, tokens: ArraySlice<Substring>, from node: inout Node) -> Bool {
        guard let first = tokens.first else {
            return node.values.removeValue(forKey: id) != nil
        }
        if first == Subject.tail, tokens.count == 1 {
            return node.tailValues.removeValue(forKey: id) != nil
        }
        guard var child = node.children[first] else { return false }
        // Take the child out so that it is uniquely referenced while it is mutated.
        node.children[first] = nil
        let removed = remove(id: id, tokens: tokens.dropFirst(), from: &child)
        if !child.isEmpty {
            node.children[first] = child
        }
        return removed
    }

    private static func collect(_ tokens: ArraySlice<Substring>, node: Node, into result: inout [Value]) {
        guard let first = tokens.first else {
            result.append(contentsOf: node.values.values)
            return
        }
        result.append(contentsOf: node.tailValues.values)
        if let child = node.children[first] {
            collect(tokens.dropFirst(), node: child, into: &result)
        }
        if first != Subject.star, let child = node.children[Subject.star] {
            collect(tokens.dropFirst(), node: child, into: &result)
        }
    }
}
