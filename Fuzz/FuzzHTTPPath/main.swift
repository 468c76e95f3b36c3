// libFuzzer target: the HTTP playback paths, `/{app}/{name}.flv` and
// `/{app}/{name}/{index|llhls}.m3u8`, `/{app}/{name}/{rendition}/{file}` (HTTPFLVRoutes,
// HLSRoutes). The input is a request target: it is parsed by HummingbirdCore's URI, as the
// server does, and its path is split on "/" with empty components dropped, as Hummingbird's
// router does; the components go to the pure parsers the route closures call.
//
// Each parser is checked against an oracle written here from the documented grammar, so an
// accepted path is exactly a valid one and a refused path exactly an invalid one:
// - a stream path component (StreamPath): 1-128 bytes of [A-Za-z0-9_.-], not starting with ".";
// - `{name}.flv` names the stream `name`, and the parsed path reads back as the request;
//   a name with `_` also offers, as its fallback, the rung after the last `_` of the stream
//   before it, when both halves are valid; `/{app}/{name}/{rung}.flv` names that rung, only;
// - an HLS file name: index.m3u8, llhls.m3u8, seg{N}.ts, seg{N}.m4s, init{N}.mp4,
//   part{N}.{P}.m4s with N and P of 1-9 decimal digits; a parsed name rendered back the way
//   HLSPlaylist writes names parses to the same resource, and so does every such name for
//   numbers below 10^9;
// - `_HLS_msn` / `_HLS_part`: both absent, or an msn of 1-9 digits with an optional part of
//   1-9 digits; anything else is a 400;
// - the rendition order of master playlists is a strict weak order (irreflexive, asymmetric,
//   transitive), so sorting with it is well defined;
// - every accepted stream maps to a NATS subject of four literal tokens (no empty token, no
//   space, `*` or `>`) that reads back as the same app, name and rendition: a viewer's path
//   cannot reach another stream's subject or a wildcard.
import CLibFuzzer
import Cluster
import Glibc
import HummingbirdCore
import Media
import Relay

// MARK: Oracles

/// The stream path grammar, byte by byte.
func grammarAllows(_ text: some StringProtocol) -> Bool {
    let bytes = Array(text.utf8)
    guard (1...128).contains(bytes.count), bytes[0] != UInt8(ascii: ".") else { return false }
    return bytes.allSatisfy { byte in
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
    }
}

/// 1-9 ASCII digits, and their value.
func boundedDecimal(_ text: some StringProtocol) -> Int? {
    let bytes = Array(text.utf8)
    guard (1...9).contains(bytes.count), bytes.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
    return bytes.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
}

func expectedResource(_ file: String) -> HLSResource? {
    let bytes = Array(file.utf8)
    if bytes.elementsEqual("index.m3u8".utf8) { return .mediaPlaylist(.transportStream) }
    if bytes.elementsEqual("llhls.m3u8".utf8) { return .mediaPlaylist(.lowLatency) }
    func middle(_ prefix: String, _ suffix: String) -> ArraySlice<UInt8>? {
        let head = Array(prefix.utf8), tail = Array(suffix.utf8)
        guard bytes.count > head.count + tail.count, bytes.starts(with: head), bytes.suffix(tail.count).elementsEqual(tail) else { return nil }
        return bytes[head.count..<(bytes.count - tail.count)]
    }
    func number(_ prefix: String, _ suffix: String) -> Int? {
        middle(prefix, suffix).flatMap { boundedDecimal(String(decoding: $0, as: UTF8.self)) }
    }
    if let number = number("seg", ".ts") { return .transportStreamSegment(number) }
    if let number = number("seg", ".m4s") { return .fragmentedSegment(number) }
    if let number = number("init", ".mp4") { return .initSection(number) }
    if let middle = middle("part", ".m4s") {
        let fields = middle.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard fields.count == 2,
              let sequence = boundedDecimal(String(decoding: fields[0], as: UTF8.self)),
              let index = boundedDecimal(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return .part(sequence: sequence, index: index)
    }
    return nil
}

/// The name HLSPlaylist writes for a resource.
func fileName(_ resource: HLSResource) -> String {
    switch resource {
    case .mediaPlaylist(.transportStream): "index.m3u8"
    case .mediaPlaylist(.lowLatency): "llhls.m3u8"
    case .transportStreamSegment(let sequence): "seg\(sequence).ts"
    case .fragmentedSegment(let sequence): "seg\(sequence).m4s"
    case .initSection(let id): "init\(id).mp4"
    case .part(let sequence, let index): "part\(sequence).\(index).m4s"
    }
}

/// MediaBusSubject writes "." as "%2E" (and "%" never occurs in a stream path).
func unescapedToken(_ token: Substring) -> String {
    let bytes = Array(token.utf8)
    var out: [UInt8] = []
    var index = 0
    while index < bytes.count {
        if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
           bytes[index + 1] == UInt8(ascii: "2"), bytes[index + 2] == UInt8(ascii: "E") {
            out.append(UInt8(ascii: "."))
            index += 3
        } else {
            out.append(bytes[index])
            index += 1
        }
    }
    return String(decoding: out, as: UTF8.self)
}

func quoted(_ text: some StringProtocol) -> String { String(reflecting: String(text)) }

// MARK: Checks

func checkComponent(_ component: some StringProtocol) {
    precondition(StreamPath.isValidComponent(component) == grammarAllows(component), "isValidComponent disagrees with the grammar on \(quoted(component))")
    precondition(HLSRoutes.boundedInteger(component) == boundedDecimal(component), "boundedInteger disagrees with the grammar on \(quoted(component))")
}

func checkSubject(_ path: StreamPath, rendition: String) {
    let subject: MediaBusSubject
    do {
        subject = try MediaBusSubject(path: path, rendition: rendition)
    } catch {
        precondition(!grammarAllows(rendition), "no bus subject for \(path) rendition \(quoted(rendition)): \(error)")
        return
    }
    precondition(grammarAllows(rendition), "a bus subject for the invalid rendition \(quoted(rendition))")
    let tokens = subject.subject.split(separator: ".", omittingEmptySubsequences: false)
    precondition(tokens.count == 4 && tokens[0] == "media", "subject \(quoted(subject.subject)) is not media.<app>.<name>.<rendition>")
    for token in tokens {
        precondition(!token.isEmpty && token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "*") && $0 != UInt8(ascii: ">") },
                     "subject \(quoted(subject.subject)) has a token that is empty or not a literal")
    }
    precondition(unescapedToken(tokens[1]) == path.app && unescapedToken(tokens[2]) == path.name && unescapedToken(tokens[3]) == rendition,
                 "subject \(quoted(subject.subject)) does not read back as \(path) \(rendition)")
    precondition(MediaBusSubject.allRenditions(of: path) == "media.\(tokens[1]).\(tokens[2]).*", "allRenditions disagrees with the subject")
}

@discardableResult
func checkStreamPath(app: String, name: String) -> StreamPath? {
    let path = try? StreamPath(app: app, name: name)
    precondition((path != nil) == (grammarAllows(app) && grammarAllows(name)), "StreamPath decided \(quoted(app))/\(quoted(name)) against the grammar")
    if let path {
        precondition(path.app == app && path.name == name && path.description == "\(app)/\(name)", "StreamPath changed \(quoted(app))/\(quoted(name))")
        checkSubject(path, rendition: "src")
        checkSubject(path, rendition: name)
    }
    return path
}

func checkFLV(app: String, file: String) {
    let path = HTTPFLVRoutes.streamPath(app: app, file: file)
    let bytes = Array(file.utf8)
    let valid = bytes.count > 4 && bytes.suffix(4).elementsEqual(".flv".utf8) && grammarAllows(app)
        && grammarAllows(String(decoding: bytes.dropLast(4), as: UTF8.self))
    precondition((path != nil) == valid, "HTTP-FLV path /\(quoted(app))/\(quoted(file)) was \(path == nil ? "refused" : "accepted")")
    if let path {
        let stream = path.primary.stream
        precondition(path.primary.isSource && stream.app == app && stream.name + ".flv" == file, "/\(quoted(app))/\(quoted(file)) read as \(path)")
        checkSubject(stream, rendition: "src")
        let name = stream.name
        var expectedFallback: (String, String)?
        if let underscore = name.lastIndex(of: "_") {
            let head = String(name[..<underscore]), tail = String(name[name.index(after: underscore)...])
            if grammarAllows(head) && grammarAllows(tail) { expectedFallback = (head, tail) }
        }
        switch (path.fallback, expectedFallback) {
        case (nil, nil):
            break
        case let (fallback?, (head, tail)?):
            precondition(fallback.stream.app == app && fallback.stream.name == head && fallback.rendition == tail,
                         "/\(quoted(app))/\(quoted(file)) fell back to \(fallback), not \(head)/\(tail)")
            checkSubject(fallback.stream, rendition: tail)
        default:
            preconditionFailure("/\(quoted(app))/\(quoted(file)): fallback \(String(describing: path.fallback)) against the grammar")
        }
    }
}

func checkRenditionFLV(app: String, name: String, file: String) {
    let path = HTTPFLVRoutes.renditionPath(app: app, name: name, file: file)
    let bytes = Array(file.utf8)
    let valid = bytes.count > 4 && bytes.suffix(4).elementsEqual(".flv".utf8) && grammarAllows(app) && grammarAllows(name)
        && grammarAllows(String(decoding: bytes.dropLast(4), as: UTF8.self))
    precondition((path != nil) == valid, "HTTP-FLV rung path /\(quoted(app))/\(quoted(name))/\(quoted(file)) was \(path == nil ? "refused" : "accepted")")
    if let path {
        precondition(path.fallback == nil && path.primary.stream.app == app && path.primary.stream.name == name
                     && path.primary.rendition.map { $0 + ".flv" } == file, "/\(quoted(app))/\(quoted(name))/\(quoted(file)) read as \(path)")
        checkSubject(path.primary.stream, rendition: path.primary.renditionName)
    }
}

func checkHLSFile(_ file: String) {
    let resource = HLSResource(file)
    precondition(resource == expectedResource(file), "HLS file name \(quoted(file)) parsed as \(String(describing: resource))")
    if let resource {
        precondition(HLSResource(fileName(resource)) == resource, "\(resource) does not parse back from \(fileName(resource))")
    }
}

/// The names the playlist writer produces for any number in range parse back to them.
func checkWrittenNames(_ first: Int, _ second: Int) {
    for resource in [HLSResource.transportStreamSegment(first), .fragmentedSegment(first), .initSection(second), .part(sequence: first, index: second)] {
        precondition(HLSResource(fileName(resource)) == resource, "the playlist's name \(fileName(resource)) does not parse back")
    }
}

func checkBlockingRequest(msn: String?, part: String?) {
    enum Outcome: Equatable {
        case none, badRequest
        case request(Int, Int?)
    }
    var expected = Outcome.badRequest
    if let msn {
        if let sequence = boundedDecimal(msn) {
            if let part {
                if let index = boundedDecimal(part) { expected = .request(sequence, index) }
            } else {
                expected = .request(sequence, nil)
            }
        }
    } else if part == nil {
        expected = Outcome.none
    }
    let actual: Outcome
    do {
        if let request = try HLSRoutes.blockingRequest(msn: msn, part: part) {
            actual = .request(request.sequence, request.part)
        } else {
            actual = .none
        }
    } catch {
        actual = .badRequest
    }
    precondition(actual == expected, "_HLS_msn=\(String(describing: msn)) _HLS_part=\(String(describing: part)) gave \(actual), not \(expected)")
}

func checkOrder(_ names: [String]) {
    for a in names {
        precondition(!HLSRoutes.order(a, a), "rendition order is not irreflexive on \(quoted(a))")
        for b in names {
            if HLSRoutes.order(a, b) { precondition(!HLSRoutes.order(b, a), "rendition order is not asymmetric on \(quoted(a)), \(quoted(b))") }
            for c in names where HLSRoutes.order(a, b) && HLSRoutes.order(b, c) {
                precondition(HLSRoutes.order(a, c), "rendition order is not transitive on \(quoted(a)), \(quoted(b)), \(quoted(c))")
            }
        }
    }
}

// MARK: Entry

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzHTTPPath(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)

    // As the server routes it.
    let uri = URI(text)
    let components = uri.path.split(separator: "/").map(String.init)
    for component in components { checkComponent(component) }
    switch components.count {
    case 2:
        checkFLV(app: components[0], file: components[1])
    case 3:
        checkStreamPath(app: components[0], name: components[1])
        checkRenditionFLV(app: components[0], name: components[1], file: components[2])
    case 4:
        if let path = checkStreamPath(app: components[0], name: components[1]) {
            checkSubject(path, rendition: components[2])
        }
        checkHLSFile(components[3])
    default:
        break
    }
    let query = uri.queryParameters
    checkBlockingRequest(msn: query[Substring("_HLS_msn")].map(String.init), part: query[Substring("_HLS_part")].map(String.init))

    // The same parsers on the raw text, wherever its pieces fall.
    let pieces = text.split(separator: "/", omittingEmptySubsequences: false).prefix(4).map(String.init)
    if pieces.count >= 2 {
        checkFLV(app: pieces[0], file: pieces[1])
        checkStreamPath(app: pieces[0], name: pieces[1])
    }
    if let last = pieces.last { checkHLSFile(last) }
    checkOrder(Array(pieces.prefix(3)) + ["src", "1080p", "720p", "audio"])

    // Any number below 10^9 (9 digits, what boundedInteger admits), from the input's ends.
    func number(_ bytes: some Sequence<UInt8>) -> Int { bytes.reduce(0) { ($0 * 256 + Int($1)) % 1_000_000_000 } }
    checkWrittenNames(number(bytes.prefix(4)), number(bytes.suffix(4)))
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzHTTPPath(data, size) })
