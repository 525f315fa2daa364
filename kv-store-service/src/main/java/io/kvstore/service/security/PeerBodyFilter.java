package io.kvstore.service.security;

import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.error.NonceRefusedException;
import io.kvstore.service.error.PayloadTooLargeException;
import io.kvstore.service.error.ServletProblems;
import io.kvstore.service.error.TooManyRequestsException;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;
import org.springframework.core.Ordered;
import org.springframework.web.filter.OncePerRequestFilter;
import tools.jackson.databind.json.JsonMapper;

/**
 * Checks a call a cluster peer forwards ({@value PeerCredentials#CALLER}) before any handler reads its body:
 * first its signature over caller, method, path, body digest, target node and time ({@link PeerCredentials#forwarded}:
 * 403 problem JSON when it is not valid, before a byte of the body is read, so a stranger cannot make this
 * node buffer bodies), then the body against the SHA-256 the signature covers ({@value PeerCredentials#BODY}):
 * it is read whole (held to the body limits by {@code BodySizeLimitFilter}, which runs first), hashed, and
 * handed on from memory; one that does not match is answered 401 problem JSON and never used. Only then is the
 * call's nonce taken ({@link PeerCredentials#take}): 409 problem JSON of type {@link NonceRefusedException#TYPE}
 * when this node took it already (a captured call sent again) or it is below its sender's replay window (the
 * calling node signs it again and resends it once), 429 when it is a new sender's and this node keeps as
 * many senders as it may; a changed body uses up no nonce. The verified
 * caller is left as {@link PeerCredentials#VERIFIED}, so it is not checked again. Requests without a
 * forwarded caller, and every request where no {@code kvstore.cluster.secret} is set, pass untouched (the
 * latter refused where the caller is decided).
 */
public final class PeerBodyFilter extends OncePerRequestFilter implements Ordered {

    private final PeerCredentials credentials;
    private final JsonMapper json;

    public PeerBodyFilter(PeerCredentials credentials, JsonMapper json) {
        this.credentials = credentials;
        this.json = json;
    }

    /** After every other filter, the body limits included. */
    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        if (!credentials.configured() || request.getHeader(PeerCredentials.CALLER) == null) {
            chain.doFilter(request, response);
            return;
        }
        // the signature (headers only) first: no body is buffered for a caller that is not a peer's
        PeerCredentials.Signed call;
        try {
            call = java.util.Objects.requireNonNull(credentials.verify(request), "a caller header is present");
        } catch (ForbiddenException e) {
            refuse(request, response, 403, "Forbidden", e.getMessage());
            return;
        } catch (NonceRefusedException e) {
            refuseNonce(request, response, e);
            return;
        }
        String signed =
                java.util.Objects.requireNonNull(request.getHeader(PeerCredentials.BODY), "checked by forwarded");
        byte[] body;
        try {
            body = request.getInputStream().readAllBytes();
        } catch (PayloadTooLargeException e) {
            refuse(request, response, 413, "Request body too large", e.getMessage());
            return;
        }
        if (!MessageDigest.isEqual(
                PeerCredentials.digest(body).getBytes(StandardCharsets.US_ASCII),
                signed.getBytes(StandardCharsets.US_ASCII))) {
            refuse(
                    request,
                    response,
                    401,
                    "Unauthorized",
                    "the body of this forwarded call does not match its signed " + PeerCredentials.BODY
                            + ": it was changed after the calling node signed it");
            return;
        }
        try {
            credentials.take(call);
        } catch (NonceRefusedException e) {
            refuseNonce(request, response, e);
            return;
        } catch (TooManyRequestsException e) {
            refuse(request, response, 429, "Too Many Requests", e.getMessage());
            return;
        } catch (ForbiddenException e) {
            refuse(request, response, 403, "Forbidden", e.getMessage());
            return;
        }
        request.setAttribute(PeerCredentials.VERIFIED, call.caller());
        chain.doFilter(new Read(request, body), response);
    }

    /** 409 of the type that tells the calling node to sign the call again and resend it, with this node's run. */
    private void refuseNonce(HttpServletRequest request, HttpServletResponse response, NonceRefusedException e)
            throws IOException {
        ServletProblems.write(
                request,
                response,
                json,
                409,
                "Conflict",
                e.getMessage(),
                null,
                NonceRefusedException.TYPE,
                Map.of(NonceRefusedException.BOOT, e.boot()));
    }

    private void refuse(
            HttpServletRequest request, HttpServletResponse response, int status, String title, String detail)
            throws IOException {
        ServletProblems.write(request, response, json, status, title, detail, null);
    }

    /** The request with its body already read and checked, served from memory. */
    private static final class Read extends HttpServletRequestWrapper {

        private final byte[] body;
        private ServletInputStream stream;

        Read(HttpServletRequest request, byte[] body) {
            super(request);
            this.body = body;
        }

        @Override
        public ServletInputStream getInputStream() {
            if (stream == null) {
                ByteArrayInputStream in = new ByteArrayInputStream(body);
                stream = new ServletInputStream() {
                    @Override
                    public int read() {
                        return in.read();
                    }

                    @Override
                    public int read(byte[] buffer, int offset, int length) {
                        return in.read(buffer, offset, length);
                    }

                    @Override
                    public boolean isFinished() {
                        return in.available() == 0;
                    }

                    @Override
                    public boolean isReady() {
                        return true;
                    }

                    @Override
                    public void setReadListener(ReadListener listener) {
                        throw new IllegalStateException("a peer's body is read before the handler, not asynchronously");
                    }
                };
            }
            return stream;
        }

        @Override
        public BufferedReader getReader() {
            String encoding = getCharacterEncoding();
            Charset charset = encoding == null ? StandardCharsets.UTF_8 : Charset.forName(encoding);
            return new BufferedReader(new InputStreamReader(getInputStream(), charset));
        }
    }
}
