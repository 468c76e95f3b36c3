import Foundation
import Testing
import Yams

/// docker/docker-compose.yml: the services, their healthchecks, and that `estuary` accepts every command.
@Suite("docker-compose cluster")
struct ComposeTests {
    /// The services on the cluster's bus.
    static let clusterServices = ["coordinator", "ingest", "transcode-1", "transcode-2", "relay-1", "relay-2"]
    /// Every Estuary service: the cluster and the edge that pulls from its relays.
    static let estuaryServices = clusterServices + ["edge"]
    static let expectedRoles = [
        "coordinator": "coordinator", "ingest": "ingest", "transcode-1": "transcode",
        "transcode-2": "transcode", "relay-1": "relay", "relay-2": "relay", "edge": "edge",
    ]

    static let natsServers = ["nats-1", "nats-2", "nats-3"]

    @Test("the compose file defines three routed nats-servers, the six cluster services and an edge, each complete")
    func servicesAreComplete() throws {
        let compose = try ComposeFile.load()
        #expect(Set(compose.services.map(\.name)) == Set(Self.natsServers + Self.estuaryServices))

        let natsToken = try #require(ComposeFile.testVariables["ESTUARY_NATS_TOKEN"])
        for name in Self.natsServers {
            let nats = try #require(compose[name], "service \(name)")
            #expect(nats.node["image"]?.string?.hasPrefix("nats:2.10") == true)
            #expect(nats.healthcheck?.joined(separator: " ").contains("http://localhost:8222/healthz") == true)
            let natsVolumes = nats.node["volumes"]?.sequence?.compactMap(\.string) ?? []
            #expect(natsVolumes.contains { $0.hasPrefix("./nats.conf:") } && natsVolumes.contains { $0.hasPrefix("./nats-cluster.conf:") },
                    "\(name) mounts docker/nats.conf and docker/nats-cluster.conf")
            #expect(Array((nats.command ?? []).prefix(4)) == ["--config", "/etc/nats/nats-cluster.conf", "--name", name], "\(name): \(nats.command ?? [])")
            // Routed to all three, with the route password (the NATS token).
            let routes = try ComposeFile.interpolate(try #require(nats.argument("--routes"), "\(name): --routes"), ComposeFile.testVariables)
            #expect(routes == Self.natsServers.map { "nats-route://estuary-route:\(natsToken)@\($0):6222" }.joined(separator: ","), "\(name): --routes")
            // nats.conf reads its token from this variable: ESTUARY_NATS_TOKEN, required, in double quotes.
            let quotedToken = try #require(nats.rawEnvironment["ESTUARY_NATS_TOKEN_QUOTED"], "\(name): environment ESTUARY_NATS_TOKEN_QUOTED")
            #expect(quotedToken.hasPrefix("\"${ESTUARY_NATS_TOKEN:?") && quotedToken.hasSuffix("}\""), "\(name): \(quotedToken)")
            let natsEnvironment = try nats.interpolatedEnvironment(ComposeFile.testVariables)
            #expect(natsEnvironment["ESTUARY_NATS_TOKEN_QUOTED"] == "\"\(natsToken)\"")
        }

        for name in Self.estuaryServices {
            let service = try #require(compose[name], "service \(name)")
            let command = try #require(service.command, "\(name): `command:` must be a list of strings")
            #expect(service.argument("--role") == Self.expectedRoles[name], "\(name): --role")
            if name == "edge" {
                // The edge pulls from both relays, in order; it joins the bus to register.
                #expect(service.argument("--upstream") == "http://relay-1:8080,http://relay-2:8080", "edge: --upstream")
                #expect(service.node["depends_on"]?["relay-1"] != nil && service.node["depends_on"]?["relay-2"] != nil, "edge: starts after the relays")
                #expect(service.healthcheck == ["CMD", "curl", "-fsS", "http://localhost:8080/readyz"], "edge: healthcheck")
            }
            // Every node connects with the cluster's NATS token (cnats reads `nats://TOKEN@host` as a token).
            // Every node is given all three servers.
            let natsURL = try #require(service.argument("--nats"), "\(name): --nats")
            #expect(natsURL.hasPrefix("nats://${ESTUARY_NATS_TOKEN:?") && natsURL.hasSuffix("}@nats-3:4222"), "\(name): --nats \(natsURL)")
            let resolvedURL = try ComposeFile.interpolate(natsURL, ComposeFile.testVariables)
            #expect(resolvedURL == Self.natsServers.map { "nats://\(natsToken)@\($0):4222" }.joined(separator: ","), "\(name): --nats")
            #expect(service.argument("--node-id") == name, "\(name): --node-id is the service name")
            #expect(service.argument("--advertise-host") == name, "\(name): --advertise-host is the service name")
            #expect(!command.contains("--check-config"), "\(name)")

            // The healthcheck probes this service's own HTTP port, named in the command: the
            // default depends on the role (an ingest 8081, a transcoder 8082).
            let httpPort = try #require(service.argument("--http-port"), "\(name): --http-port")
            let test = try #require(service.healthcheck, "\(name): healthcheck.test")
            #expect(
                test == ["CMD", "curl", "-fsS", "http://localhost:\(httpPort)/readyz"]
                    || test == ["CMD", "curl", "-fsS", "http://localhost:\(httpPort)/healthz"],
                "\(name): healthcheck \(test)"
            )
            #expect(service.node["healthcheck"]?["interval"] != nil, "\(name): healthcheck interval")
            for server in Self.natsServers {
                #expect(service.node["depends_on"]?[server]?["condition"]?.string == "service_healthy", "\(name): waits for a healthy \(server)")
            }
            #expect(service.node["restart"]?.string != nil, "\(name): restart policy")
            #expect(service.node["image"]?.string != nil || service.node["build"] != nil, "\(name): image or build")
        }

        let coordinator = try #require(compose["coordinator"])
        #expect(coordinator.argument("--admin-port") == "8090" && coordinator.argument("--admin-bind") == "0.0.0.0", "the coordinator's admin plane is open inside compose's network")
        #expect((coordinator.node["ports"]?.sequence?.compactMap(\.string) ?? []) == ["127.0.0.1:8090:8090"], "the admin plane is published on the host's loopback only")
        #expect(coordinator.argument("--database") == "/data/estuary.sqlite")
        let volumes = coordinator.node["volumes"]?.sequence?.compactMap(\.string) ?? []
        #expect(volumes.contains { $0.hasSuffix(":/data") }, "the coordinator's SQLite file lives on a volume")
        let adminToken = try #require(coordinator.rawEnvironment["ESTUARY_ADMIN_TOKEN"], "coordinator: environment ESTUARY_ADMIN_TOKEN")
        #expect(adminToken.hasPrefix("${ESTUARY_ADMIN_TOKEN:?") && adminToken.hasSuffix("}"), "coordinator: \(adminToken)")

        let ports = { (name: String) in compose[name]?.node["ports"]?.sequence?.compactMap(\.string) ?? [] }
        #expect(ports("ingest").contains("1935:1935"))
        #expect(ports("relay-1").contains("8081:8080"))
        #expect(ports("relay-2").contains("8082:8080"))
        #expect(ports("edge").contains("8083:8080"))
    }

    @Test("node accepts every service's command (--check-config)", arguments: estuaryServices)
    func nodeAcceptsCommand(service name: String) async throws {
        let compose = try ComposeFile.load()
        let service = try #require(compose[name])
        // As compose runs it, with the secrets set.
        let command = try service.interpolatedCommand(ComposeFile.testVariables)
        let run = try await runProcess(
            try Deployment.nodeBinary(), command + ["--check-config"],
            environment: try service.interpolatedEnvironment(ComposeFile.testVariables), timeout: .seconds(30)
        )
        #expect(run.status == 0 && !run.timedOut, "\(name): \(run.summary)")
        let role = try #require(Self.expectedRoles[name])
        #expect(run.output.split(separator: "\n").contains { $0.hasPrefix("ok: role \(role)") }, "\(name): \(run.output)")
    }

    @Test("node refuses a broken command, so the check above can fail")
    func nodeRefusesBrokenCommand() async throws {
        let run = try await runProcess(
            try Deployment.nodeBinary(), ["--role", "relay", "--nats", "nats://nats:4222", "--no-such-flag", "--check-config"],
            timeout: .seconds(30)
        )
        #expect(run.status != 0, "\(run.summary)")
        #expect(!run.output.contains("ok: role"), "\(run.summary)")
    }

    @Test("node refuses a node id that is not one NATS subject token", arguments: ["relay.1", "relay 1", "relay*", String(repeating: "r", count: 65)])
    func nodeRefusesANodeIDThatIsNotAToken(_ nodeID: String) async throws {
        let run = try await runProcess(
            try Deployment.nodeBinary(), ["--role", "relay", "--nats", "nats://nats:4222", "--node-id", nodeID, "--check-config"],
            timeout: .seconds(30)
        )
        #expect(run.status != 0, "\(run.summary)")
        #expect(run.output.contains("node id"), "\(run.summary)")
    }
}
