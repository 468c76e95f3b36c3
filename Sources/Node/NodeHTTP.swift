import Hummingbird
import HummingbirdCore
import Media
import Logging
import NIOCore
import NIOPosix
import Prometheus

/// The HTTP endpoints every node has, whatever its role.
enum NodeHTTP {
    /// The admin plane's router (`adminBind`:`adminPort`, loopback by default): `/healthz`,
    /// `/readyz` and `/metrics` (Prometheus text); the roles add the API under `/api/v1`.
    static func adminRouter(metrics: PrometheusCollectorRegistry, ready: @escaping @Sendable () -> Bool = { true }) -> Router<NodeRequestContext> {
        let router = Self.router(ready: ready)
        router.get("/metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
        }
        return router
    }

    /// A router with CORS for every route, `/healthz` (the process answers) and `/readyz` (it
    /// can do its job: for a cluster node, its bus is connected). The playback port's router:
    /// the relay adds the media routes, and nothing else is served there.
    static func router(ready: @escaping @Sendable () -> Bool = { true }) -> Router<NodeRequestContext> {
        let router = Router(context: NodeRequestContext.self)
        // Browser players (hls.js, flv.js, mpegts.js) and dashboards live on other origins:
        // every answer carries CORS headers, errors and the router's own 404s included,
        // and preflights are answered. The playback routes also set the header themselves,
        // for clients that send no Origin.
        router.add(middleware: CORSMiddleware(
            allowOrigin: .all,
            allowHeaders: [.accept, .authorization, .contentType, .origin, .range],
            allowMethods: [.get, .head, .post, .delete, .options]
        ))
        router.get("/healthz") { _, _ in "ok\n" }
        router.get("/readyz") { _, _ -> Response in
            ready()
                ? Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ready\n")))
                : Response(status: .serviceUnavailable, body: .init(byteBuffer: ByteBuffer(string: "not ready\n")))
        }
        return router
    }

    /// The HTTP listener, or with `tls` the HTTPS one on `port`: the same routes either way.
    /// With `live`, a reload gives connections accepted afterwards its connection limits,
    /// header timeout and write-stall timeout; the idle timeout and the address stay.
    static func application(
        router: Router<NodeRequestContext>, configuration: NodeConfiguration, logger: Logger,
        tls: TLSCertificates? = nil, host: String? = nil, port: Int? = nil, live: LiveConfiguration? = nil
    ) -> some ApplicationProtocol {
        let limiter = ConnectionLimiter(limits: configuration.httpConnectionLimits)
        let settings = Reloadable(configuration.httpGuard)
        live?.subscribe { new, _ in
            limiter.setLimits(new.httpConnectionLimits)
            settings.set(new.httpGuard)
        }
        return Application(
            router: router,
            // Keep-alive connections idle for `httpIdleTimeout` are closed (Hummingbird's
            // default is never); the guard bounds connections, request heads and write stalls;
            // live HTTP-FLV bodies are written from the channel (`NodeHTTPChannel`).
            server: HTTPServerBuilder { responder in
                NodeHTTPChannel(
                    responder: responder,
                    connectionHandlers: { [HTTPConnectionGuard(settings: settings.value, limiter: limiter, logger: logger)] },
                    idleTimeout: configuration.httpIdleTimeout,
                    tls: tls
                )
            },
            configuration: .init(address: .hostname(host ?? configuration.bindHost, port: port ?? configuration.httpPort), serverName: "estuary"),
            eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton),
            logger: logger
        )
    }
}
