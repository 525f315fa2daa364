package io.kvstore.service.cluster;

import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.error.ProblemAdvice;
import io.kvstore.service.error.ServletProblems;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.EngineCallers;
import io.kvstore.service.security.TenantGuard;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.http.ProblemDetail;
import org.springframework.web.filter.ServerHttpObservationFilter;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code POST /v1/cluster/{ns}/blocks:probe}: which of the named blocks this node holds, asked by another
 * node in the bytes of {@link ProbeWire}. A plain servlet beside Spring MVC's dispatcher rather than a
 * controller method: a cluster lookup of 2,048 blocks waits on one probe per peer, and on the probed node
 * the dispatcher (handler mapping, argument resolution, return-value conversion) cost about as much CPU as
 * the probe itself (a JFR profile of a peer under bench/cluster.sh: 55 % of its request CPU outside the
 * probe, ~1/4 of it in the dispatcher). The rules are the engine API's all the same: the caller is
 * decided by {@link EngineCallers} (the signed forwarded caller, or a token), its tenant's read access is
 * checked, the body is bounded by the namespace's hash length and {@code kvstore.limits.max-blocks-per-request},
 * every refusal is problem JSON, and the servlet filters (body limit, the request observation that
 * {@code http_server_requests_seconds} reports) run as for any request. Each call is answered on the
 * container's request thread, so its threads bound the probes in flight as they do every other call.
 */
final class ProbeServlet extends HttpServlet {

    /** The servlet's mapping, below the servlet context. */
    static final String MAPPING = "/v1/cluster/*";
    /** The URI pattern requests are observed under (as a controller's would be). */
    static final String PATTERN = "/v1/cluster/{ns}/blocks:probe";

    private static final String SUFFIX = "/blocks:probe";

    private final transient EngineCallers callers;
    private final transient TenantGuard guard;
    private final transient NamespaceRegistry namespaces;
    private final transient Peers peers;
    private final transient ProblemAdvice problems;
    private final transient JsonMapper json;
    private final int maxBlocks;

    ProbeServlet(
            EngineCallers callers,
            TenantGuard guard,
            NamespaceRegistry namespaces,
            Peers peers,
            ProblemAdvice problems,
            JsonMapper json,
            int maxBlocks) {
        this.callers = callers;
        this.guard = guard;
        this.namespaces = namespaces;
        this.peers = peers;
        this.problems = problems;
        this.json = json;
        this.maxBlocks = maxBlocks;
    }

    /** The path a probe of {@code encodedNamespace} (already URL-encoded) is sent to, below a node's address. */
    static String path(String encodedNamespace) {
        return "/v1/cluster/" + encodedNamespace + SUFFIX;
    }

    @Override
    protected void doPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        ServerHttpObservationFilter.findObservationContext(request).ifPresent(c -> c.setPathPattern(PATTERN));
        byte[] answer;
        try {
            String ns = namespace(request.getPathInfo());
            Caller caller = callers.of(request);
            guard.requireRead(caller, ns);
            NamespaceSpec spec = namespaces.require(ns);
            byte[] body = request.getInputStream().readNBytes(1 + maxBlocks * spec.hashBytes() + 1);
            ProbeWire.Asked asked = ProbeWire.parseRequest(body, spec.hashBytes(), maxBlocks);
            answer = ProbeWire.answer(peers.of(peers.self()).probe(caller, ns, asked.hashes(), asked.lease()), json);
        } catch (RuntimeException | IOException e) {
            refuse(request, response, e);
            return;
        }
        response.setStatus(HttpServletResponse.SC_OK);
        response.setContentType("application/octet-stream");
        response.setContentLength(answer.length);
        response.getOutputStream().write(answer);
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if ("POST".equals(request.getMethod())) {
            doPost(request, response);
            return;
        }
        ServerHttpObservationFilter.findObservationContext(request).ifPresent(c -> c.setPathPattern(PATTERN));
        response.setHeader("Allow", "POST");
        write(request, response, 405, "Method Not Allowed", "a probe is a POST", null);
    }

    /** The namespace of a path {@code /{ns}/blocks:probe} below the mapping (decoded); 404 for any other path. */
    private static String namespace(String pathInfo) {
        if (pathInfo == null
                || !pathInfo.endsWith(SUFFIX)
                || pathInfo.length() <= 1 + SUFFIX.length()
                || pathInfo.indexOf('/', 1) != pathInfo.length() - SUFFIX.length()) {
            throw new NotFoundException("no such cluster endpoint: /v1/cluster" + (pathInfo == null ? "" : pathInfo)
                    + " (probes are POST " + PATTERN + ")");
        }
        return pathInfo.substring(1, pathInfo.length() - SUFFIX.length());
    }

    private void refuse(HttpServletRequest request, HttpServletResponse response, Exception e) throws IOException {
        ProblemDetail problem = problems.describe(e);
        Object field =
                problem.getProperties() == null ? null : problem.getProperties().get("field");
        write(
                request,
                response,
                problem.getStatus(),
                problem.getTitle() == null ? "Error" : problem.getTitle(),
                problem.getDetail() == null ? "" : problem.getDetail(),
                field);
    }

    private void write(
            HttpServletRequest request,
            HttpServletResponse response,
            int status,
            String title,
            String detail,
            Object field)
            throws IOException {
        ServletProblems.write(request, response, json, status, title, detail, field);
    }
}
