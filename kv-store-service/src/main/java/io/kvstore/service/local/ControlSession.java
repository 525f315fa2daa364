package io.kvstore.service.local;

import io.kvstore.concurrent.IntervalLog;
import io.kvstore.engine.WriterState;
import io.kvstore.service.blocks.CommitRequest;
import io.kvstore.service.blocks.CommitResponse;
import io.kvstore.service.blocks.ReserveRequest;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.PayloadTooLargeException;
import io.kvstore.service.error.ProblemAdvice;
import io.kvstore.service.error.UnauthorizedException;
import io.kvstore.service.local.ControlFrames.MalformedFrameException;
import io.kvstore.service.local.ControlFrames.Reader;
import io.kvstore.service.local.ControlFrames.Writer;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TokenStore;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.Validator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;

/**
 * One connection of the local control socket: its first frame authenticates the caller (a bearer token, as
 * HTTP's {@code Authorization} header carries it), then each request frame is answered in turn from
 * {@link LocalPathService}, the code {@code /v1/local} answers from. A refused call gets an error frame with
 * the problem fields HTTP would give and the connection stays open; a connection that fails to authenticate
 * or sends a malformed frame gets an error frame and is closed; one whose token is revoked is closed at the
 * revocation ({@link ControlSocketServer} closes it, idle or not; a frame it sends meanwhile is refused).
 *
 * <p>A client that names itself in its HELLO has the reservations granted on this connection fenced past their
 * expiry ({@link WriterState}) while this connection is open and its token valid. Once this connection closes
 * before they are named (the client gave up waiting for an answer: it may never learn them, or kvstore closed
 * it) or its token is revoked, the client may still be copying but will not name them: they go at their expiry
 * as unfenced ones, whose slots ask their next writer for CRC32Cs. A client that closed its last connection
 * itself is gone, its slots clean; one whose last connection kvstore closed is lost: its slots stay remembered,
 * as no one's ({@link WriterConnections}).
 *
 * <p>A lease whose answer the client never read (it could not be sent, or the client closed the connection
 * with the answer unread) is released at once: no one can name it. Others belong to the client, which may
 * release them over any of its connections; those it has not released when its last connection closes are
 * released then. A client that named no id has its leases run to their timeout, as over HTTP.
 */
final class ControlSession implements Runnable {

    private static final Logger log = LoggerFactory.getLogger(ControlSession.class);

    private final SocketChannel channel;
    private final LocalPathService service;
    private final TokenStore tokens;
    private final ProblemAdvice problems;
    private final Validator validator;
    private final long maxFrame;
    /** Shared by the server's sessions: a client that keeps sending malformed frames gets a line a minute. */
    private final IntervalLog malformedLines;
    /** Set once the HELLO frame is accepted; read by the server's credentials deadline. */
    private volatile @Nullable Caller caller;
    /** The connected clients, by the id each names in its HELLO. */
    private final WriterConnections writers;
    /** The client id this connection's HELLO named (with its tenant), or null for a client that named none. */
    private @Nullable String clientId;

    private @Nullable String clientTenant;
    /** The connections of the client this HELLO named, or null for a client that named none. */
    private WriterConnections.@Nullable Client client;
    /** What the writer of a reservation granted here is, for its fence; null for a client that named none. */
    private @Nullable ConnectionFence fence;
    /** Whether kvstore ends this connection (a refusal, a revoked token), rather than the client. */
    private volatile boolean closedByService;
    /**
     * The reservation the answer being sent names, until it is sent: a client that never got it (it gave up
     * waiting and closed the connection) cannot name it, so it is cancelled rather than left to its fence.
     */
    private @Nullable String unsent;
    /** The lease the answer being sent names, until it is sent: released when it is not (no one learnt it). */
    private @Nullable String unsentLease;
    /**
     * The lease the last answer sent names, until the next frame shows the client read it: a connection that
     * then ends with that answer unread (a reset, not an end of stream) had a client that never learnt it.
     */
    private @Nullable String unreadLease;
    /** {@link TokenStore#revocations()} when the caller's token was last known valid. */
    private int revocationsSeen;

    ControlSession(
            SocketChannel channel,
            LocalPathService service,
            TokenStore tokens,
            ProblemAdvice problems,
            Validator validator,
            long maxFrame,
            IntervalLog malformedLines,
            WriterConnections writers) {
        this.channel = channel;
        this.writers = writers;
        this.service = service;
        this.tokens = tokens;
        this.problems = problems;
        this.validator = validator;
        this.maxFrame = maxFrame;
        this.malformedLines = malformedLines;
    }

    @Override
    public void run() {
        try (channel) {
            ByteBuffer header = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            while (true) {
                header.clear();
                try {
                    if (!readFully(header)) {
                        return; // the client closed the connection, having read every answer
                    }
                } catch (IOException e) {
                    if (!closedByService && !(e instanceof ClosedChannelException)) {
                        // a reset, not kvstore closing the channel: the client closed it with the last answer unread
                        releaseUnread();
                    }
                    throw e;
                }
                unreadLease = null; // a client sends its next frame once it read the answer
                long length = Integer.toUnsignedLong(header.getInt(0));
                if (length < 1 || length > maxFrame) {
                    closedByService = true;
                    send(
                            length < 1
                                    ? refusal(
                                            problems.describe(new MalformedFrameProblem("an empty frame")),
                                            "Malformed frame")
                                    : refusal(
                                            problems.describe(new PayloadTooLargeException(
                                                    "a frame of " + length + " bytes; at most " + maxFrame
                                                            + " (kvstore.limits.max-json-body)")),
                                            null));
                    return;
                }
                ByteBuffer body = ByteBuffer.allocate((int) length);
                if (!readFully(body)) {
                    return;
                }
                ByteBuffer answer;
                boolean close = false;
                unsent = null;
                unsentLease = null;
                try {
                    answer = answer(new Reader(body.flip()));
                } catch (MalformedFrameException e) {
                    long unlogged = malformedLines.occurred();
                    if (unlogged >= 0) {
                        log.info(
                                "local control socket: closing a connection after a malformed frame ({}){}",
                                e.getMessage(),
                                IntervalLog.more(unlogged, "connection(s) closed for a malformed frame"));
                    }
                    answer = refusal(problems.describe(new MalformedFrameProblem(e.getMessage())), "Malformed frame");
                    close = true;
                } catch (Exception e) {
                    answer = refusal(problems.describe(e), null);
                    close = caller == null; // not authenticated: nothing more is answered
                }
                try {
                    send(answer);
                } catch (IOException e) {
                    cancelUnsent();
                    releaseUnsent();
                    throw e;
                }
                unsent = null;
                unreadLease = unsentLease;
                unsentLease = null;
                if (close) {
                    closedByService = true;
                    return;
                }
            }
        } catch (IOException e) {
            log.debug("local control connection ended: {}", e.toString());
        } finally {
            ConnectionFence f = fence;
            if (f != null) {
                f.open = false; // before the client's count: the reservations granted here are never seen gone early
            }
            WriterConnections.Client c = client;
            if (clientId != null
                    && clientTenant != null
                    && c != null
                    && writers.closed(clientTenant, clientId, closedByService)) {
                releaseLeftLeases(c);
            }
        }
    }

    /**
     * What the writer of a reservation granted on one connection is, asked by the engine's sweep once the
     * reservation expired: fenced while that connection is open and its caller still admitted; gone or lost,
     * for good, once the client's last connection closed ({@link WriterConnections.Client#ended()}); else it may
     * still be copying but will not name the reservation. Holds nothing of the session, so a range its client
     * left keeps no connection's buffers alive.
     */
    private static final class ConnectionFence implements Supplier<WriterState> {
        private final WriterConnections.Client client;
        private final Caller caller;
        private final int revocationsAtHello;
        private final TokenStore tokens;
        /** False once the connection closed: its reservations not yet named lose their fence. */
        private volatile boolean open = true;

        ConnectionFence(WriterConnections.Client client, Caller caller, int revocationsAtHello, TokenStore tokens) {
            this.client = client;
            this.caller = caller;
            this.revocationsAtHello = revocationsAtHello;
            this.tokens = tokens;
        }

        @Override
        public WriterState get() {
            WriterState ended = client.ended();
            if (ended != null) {
                return ended;
            }
            // kvstore closing another connection of the client (a malformed frame there) lifts no fence here: this
            // connection still shows the client alive and able to name what it was granted
            if (!open || !admitted()) {
                return WriterState.UNWATCHED;
            }
            return WriterState.FENCED;
        }

        /** Whether the caller the connection authenticated is still let in (its token not revoked since). */
        private boolean admitted() {
            if (caller == Caller.LOCAL) {
                return tokens.protectedMode();
            }
            return tokens.revocations() == revocationsAtHello || tokens.isLive(caller.tokenId());
        }
    }

    /** Releases the lease whose answer could not be sent. */
    private void releaseUnsent() {
        String id = unsentLease;
        unsentLease = null;
        releaseNamedByNoOne(id);
    }

    /** Releases the lease of the last answer, which the client closed the connection without reading. */
    private void releaseUnread() {
        String id = unreadLease;
        unreadLease = null;
        releaseNamedByNoOne(id);
    }

    private void releaseNamedByNoOne(@Nullable String leaseId) {
        Caller who = caller;
        WriterConnections.Client c = client;
        if (leaseId == null) {
            return;
        }
        if (c != null) {
            c.released(leaseId);
        }
        if (who != null) {
            release(who, leaseId, "unread");
        }
    }

    /** Releases the leases the client ended without releasing (its last connection just closed). */
    private void releaseLeftLeases(WriterConnections.Client c) {
        for (Map.Entry<String, WriterConnections.Held> lease : c.takeLeases()) {
            release(lease.getValue().caller(), lease.getKey(), "left by a client that closed every connection");
        }
    }

    private void release(Caller who, String leaseId, String why) {
        try {
            service.release(who, leaseId);
        } catch (RuntimeException e) {
            // released meanwhile (over HTTP) or expired: nothing held any more
            log.debug("local control socket: releasing lease {} ({}): {}", leaseId, why, e.toString());
        }
    }

    /** Cancels the reservation whose answer could not be sent (its slots reached no one). */
    private void cancelUnsent() {
        String id = unsent;
        Caller who = caller;
        unsent = null;
        if (id != null && who != null) {
            try {
                service.cancel(who, id);
            } catch (RuntimeException e) {
                log.debug("local control socket: cancelling unanswered reservation {}: {}", id, e.toString());
            }
        }
    }

    /** A malformed frame is a bad request; its problem says where the frame went wrong. */
    private static final class MalformedFrameProblem extends InvalidRequestException {
        private static final long serialVersionUID = 1L;

        MalformedFrameProblem(String message) {
            super("frame", "malformed frame: " + message);
        }
    }

    private ByteBuffer answer(Reader in) throws IOException {
        byte kind = in.kind();
        Caller who = caller;
        if (who == null) {
            if (kind != ControlFrames.HELLO) {
                throw new UnauthorizedException(
                        "the first frame of a control connection must be HELLO with the caller's bearer token");
            }
            String token = in.str();
            // since the fenced reservations: the client's id, the same on all its connections (older clients
            // end the frame after the token)
            String id = in.hasRemaining() ? in.str() : "";
            in.end();
            revocationsSeen = tokens.revocations(); // before: a revocation from now on is checked at the next frame
            who = tokens.localCaller(token.isEmpty() ? null : token);
            String regionId = service.describe(who).regionId();
            Writer hello = new Writer(ControlFrames.OK).str(regionId == null ? "" : regionId);
            if (!id.isEmpty()) {
                WriterConnections.Client c = writers.opened(who.tenant(), id);
                fence = new ConnectionFence(c, who, revocationsSeen, tokens);
                client = c;
                clientTenant = who.tenant();
                clientId = id;
                hello.u8(1); // the reservations granted on this connection are fenced while it is open (writerState)
            }
            caller = who;
            if (who != Caller.LOCAL && tokens.revocations() != revocationsSeen && !tokens.isLive(who.tokenId())) {
                // revoked while this HELLO was answered, maybe before the revocation looked for its connections
                caller = null; // the connection closes after this answer
                throw new UnauthorizedException("API token " + who.tokenId() + " was revoked");
            }
            return hello.finish();
        }
        if (who == Caller.LOCAL && !tokens.protectedMode()) {
            // said HELLO without a token in protected mode, which a token issued since has ended: refused as a
            // loopback HTTP client without a token now is
            caller = null; // the connection closes after this answer
            throw new UnauthorizedException("kvstore left protected mode (an API token was issued): the engine API "
                    + "needs a bearer token; connect again with one");
        }
        int revocations = tokens.revocations();
        if (revocations != revocationsSeen) {
            if (who != Caller.LOCAL && !tokens.isLive(who.tokenId())) {
                caller = null; // the connection closes after this answer
                throw new UnauthorizedException("API token " + who.tokenId() + " was revoked");
            }
            revocationsSeen = revocations;
        }
        return switch (kind) {
            case ControlFrames.RESERVE -> reserve(who, in);
            case ControlFrames.COMMIT -> commit(who, in);
            case ControlFrames.CANCEL -> {
                String id = in.str();
                in.end();
                service.cancel(who, id);
                yield new Writer(ControlFrames.OK).finish();
            }
            case ControlFrames.LEASE -> lease(who, in);
            case ControlFrames.RELEASE -> {
                String id = in.str();
                in.end();
                WriterConnections.Client c = client;
                try {
                    service.release(who, id);
                } finally {
                    if (c != null) {
                        c.released(id); // whichever of the client's connections it was granted on; or held no more
                    }
                }
                yield new Writer(ControlFrames.OK).finish();
            }
            default -> throw new MalformedFrameException("unknown frame kind " + Byte.toUnsignedInt(kind));
        };
    }

    private ByteBuffer reserve(Caller who, Reader in) throws IOException {
        String ns = in.str();
        Long timeout = timeout(in.i64());
        int n = in.count(2);
        List<ReserveRequest.Block> blocks = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String hash = in.hash();
            blocks.add(new ReserveRequest.Block(hash, in.hash()));
        }
        in.end();
        ReserveRequest request = valid(new ReserveRequest(blocks, timeout));
        LocalPathService.ReserveResponse r = service.reserve(who, ns, request, fence);
        unsent = r.reservationId();
        Writer out = new Writer(ControlFrames.OK)
                .str(r.regionId())
                .str(r.reservationId())
                .i64(r.expiresAt().toEpochMilli())
                .u32(r.slots().size());
        for (LocalPathService.Slot slot : r.slots()) {
            out.hash(slot.hash()).i64(slot.offset()).u32(slot.length());
        }
        hashes(out, r.alreadyStored());
        if (fence != null) {
            out.u8(r.writerChecksums() ? 1 : 0); // fenced clients only: older ones end the answer above
        }
        return out.finish();
    }

    private ByteBuffer commit(Caller who, Reader in) {
        String ns = in.str();
        String reservationId = in.str();
        int n = in.count(5);
        Map<String, Long> crcs = n == 0 ? null : new HashMap<>();
        for (int i = 0; i < n; i++) {
            String hash = in.hash();
            crcs.put(hash == null ? "" : hash, in.u32());
        }
        in.end();
        CommitResponse c = service.commit(who, ns, new CommitRequest(reservationId, crcs));
        Writer out = new Writer(ControlFrames.OK);
        hashes(out, c.committed());
        hashes(out, c.alreadyStored());
        out.u32(c.failed().size());
        for (CommitResponse.Failure f : c.failed()) {
            out.hash(f.hash()).str(f.reason());
        }
        return out.finish();
    }

    private ByteBuffer lease(Caller who, Reader in) {
        String ns = in.str();
        Long timeout = timeout(in.i64());
        int n = in.count(1);
        List<String> hashes = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String hash = in.hash();
            hashes.add(hash == null ? "" : hash);
        }
        in.end();
        LocalPathService.LeaseResponse r = service.lease(who, ns, new LocalPathService.LeaseRequest(hashes, timeout));
        String leaseId = r.leaseId();
        Instant expiresAt = r.expiresAt();
        unsentLease = leaseId;
        WriterConnections.Client c = client;
        if (c != null && leaseId != null && expiresAt != null) {
            c.leased(leaseId, who, expiresAt);
        }
        Writer out = new Writer(ControlFrames.OK)
                .str(r.regionId())
                .str(r.leaseId() == null ? "" : r.leaseId())
                .i64(r.expiresAt() == null ? 0 : r.expiresAt().toEpochMilli())
                .u32(r.locations().size());
        for (LocalPathService.Location l : r.locations()) {
            out.hash(l.hash())
                    .i64(l.offset() == null ? -1 : l.offset())
                    .u32(l.length())
                    .i64(l.crc32c() == null ? -1 : l.crc32c());
        }
        return out.finish();
    }

    private static @Nullable Long timeout(long seconds) {
        return seconds == -1 ? null : seconds;
    }

    private static void hashes(Writer out, List<String> hashes) {
        out.u32(hashes.size());
        for (String h : hashes) {
            out.hash(h);
        }
    }

    /** The request's constraints, checked as {@code @Valid} checks them over HTTP (same field, same detail). */
    private <T> T valid(T request) {
        Set<ConstraintViolation<T>> violations = validator.validate(request);
        if (!violations.isEmpty()) {
            ConstraintViolation<T> first = violations.iterator().next();
            String field = first.getPropertyPath().toString();
            throw new InvalidRequestException(field, field + " " + first.getMessage());
        }
        return request;
    }

    /**
     * Closes this connection, as kvstore ending it, when it authenticated with the token {@code tokenId} (just
     * revoked); its thread then ends. Returns whether it did. Its client is never seen gone from it: the
     * client's process may still be copying into the slots it was granted (if it was the client's last
     * connection, the client is lost: its slots stay remembered for good, as no one's).
     */
    boolean closeIfAuthenticatedWith(String tokenId) {
        Caller who = caller;
        if (who == null || who == Caller.LOCAL || !who.tokenId().equals(tokenId)) {
            return false;
        }
        closedByService = true; // before the close: the session's end reports it to the client's connections
        try {
            channel.close();
        } catch (IOException e) {
            log.debug("local control socket: closing a revoked token's connection failed: {}", e.toString());
        }
        return true;
    }

    /** Whether the connection has sent accepted credentials. */
    boolean authenticated() {
        return caller != null;
    }

    /** Answers a connection the server cannot take 503 (its frame in place of HELLO's answer) and closes it. */
    static void refuseBusy(SocketChannel channel, int limit) {
        try (channel) {
            ByteBuffer frame = refusal(
                    ProblemDetail.forStatusAndDetail(
                            HttpStatus.SERVICE_UNAVAILABLE,
                            "the local control socket serves " + limit + " connections at once"
                                    + " (kvstore.local.control-max-connections); try again, or use /v1/local over"
                                    + " HTTP"),
                    "Too many control connections");
            while (frame.hasRemaining()) {
                channel.write(frame);
            }
        } catch (IOException e) {
            log.debug("local control socket: refusing a connection failed: {}", e.toString());
        }
    }

    private static ByteBuffer refusal(ProblemDetail problem, @Nullable String title) {
        Object field =
                problem.getProperties() == null ? null : problem.getProperties().get("field");
        return new Writer(ControlFrames.ERROR)
                .u16(problem.getStatus())
                .str(title != null ? title : problem.getTitle() == null ? "" : problem.getTitle())
                .str(problem.getDetail() == null ? "" : problem.getDetail())
                .str(field == null ? "" : field.toString())
                .finish();
    }

    private boolean readFully(ByteBuffer into) throws IOException {
        while (into.hasRemaining()) {
            if (channel.read(into) < 0) {
                return false;
            }
        }
        return true;
    }

    private void send(ByteBuffer frame) throws IOException {
        while (frame.hasRemaining()) {
            channel.write(frame);
        }
    }
}
