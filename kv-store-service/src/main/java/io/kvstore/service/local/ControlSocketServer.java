package io.kvstore.service.local;

import io.kvstore.concurrent.IntervalLog;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.ProblemAdvice;
import io.kvstore.service.security.TokenStore;
import jakarta.validation.Validator;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

/**
 * The local control socket: a Unix domain socket that carries the same-host path's hot calls (reserve,
 * commit, cancel, lease, release) in compact binary frames ({@link ControlFrames}), so a local engine's
 * control calls skip Tomcat, JSON and the per-request observation of Spring MVC. A platform thread per
 * connection reads a frame, answers it, and blocks in {@code read} for the next (one call at a time per
 * connection; clients open one connection per thread, so there are few). Not a virtual thread: each of
 * its waits parks it and the JDK's poller wakes it, which cost 0.07-0.09 ms of service CPU per call more
 * (bench/control_calls.py: lease+release 0.133 against 0.038-0.043 ms).
 *
 * <p>Who may connect is decided as for the tier's file: the socket is bound in a private directory, given
 * the file's mode ({@code 0600}, or {@code 0660} and the file's group) and only then moved to its path, so no
 * other user can connect in between. Each connection then authenticates with a bearer token as HTTP does
 * ({@link ControlSession}), and every call goes through the tenant checks of {@link LocalPathService}.
 * Off when the same-host path is off, when {@code kvstore.local.control-socket} is empty, and in cluster
 * mode (a reserve there must first be checked for placement on this node, which only HTTP does).
 */
@Component
public class ControlSocketServer implements SmartLifecycle {

    private static final Logger log = LoggerFactory.getLogger(ControlSocketServer.class);

    private final LocalDataPath local;
    private final LocalPathService service;
    private final TokenStore tokens;
    private final ProblemAdvice problems;
    private final Validator validator;
    private final @Nullable String configured;
    private final long maxFrame;
    private final boolean cluster;
    private final int maxConnections;
    private final Duration helloTimeout;
    /** The connections served now, each with its session. */
    private final Map<SocketChannel, ControlSession> open = new ConcurrentHashMap<>();
    /** Closes connections that have not sent their credentials in time. */
    private final ScheduledExecutorService deadlines = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("kvstore-control-deadlines").daemon().factory());
    /** Lines for connections refused as too many: one a minute at most, with the count since. */
    private final IntervalLog refusals = new IntervalLog(Duration.ofMinutes(1));
    /** Lines for connections closed after a malformed frame, shared by every session: one a minute at most. */
    private final IntervalLog malformedFrames = new IntervalLog(Duration.ofMinutes(1));
    /** The clients connected now, for the fences of their reservations. */
    private final WriterConnections writers = new WriterConnections();

    private volatile @Nullable ServerSocketChannel server;
    private volatile @Nullable Path path;

    public ControlSocketServer(
            LocalDataPath local,
            LocalPathService service,
            TokenStore tokens,
            ProblemAdvice problems,
            Validator validator,
            KvStoreProperties properties,
            @Value("${kvstore.cluster.enabled:false}") boolean cluster) {
        this.local = local;
        this.service = service;
        this.tokens = tokens;
        this.problems = problems;
        this.validator = validator;
        this.configured = properties.local().controlSocket();
        this.maxFrame = properties.limits().maxJsonBody().toBytes();
        this.maxConnections = properties.local().controlMaxConnections();
        this.helloTimeout = properties.local().controlHelloTimeout();
        this.cluster = cluster;
        // a revoked token's connections are closed at once: an idle one (a client's anchor sends no frame) would
        // otherwise hold its thread and its place among control-max-connections until the client exits
        tokens.onRevocation(this::closeConnectionsOf);
    }

    /** Closes every connection authenticated with the token {@code tokenId}, as kvstore closing them. */
    private void closeConnectionsOf(String tokenId) {
        int closed = 0;
        for (ControlSession session : open.values()) {
            if (session.closeIfAuthenticatedWith(tokenId)) {
                closed++;
            }
        }
        if (closed > 0) {
            log.info("local control socket: closed {} connection(s) of revoked API token {}", closed, tokenId);
        }
    }

    @Override
    public void start() {
        Path file = local.file();
        if (file == null || (configured != null && configured.isBlank())) {
            return;
        }
        if (cluster) {
            log.info("local control socket off in cluster mode: same-host clients send their control calls over HTTP");
            return;
        }
        Path socket = configured == null ? file.resolveSibling(file.getFileName() + ".sock") : Path.of(configured);
        try {
            server = bind(socket.toAbsolutePath(), local.group());
        } catch (IOException e) {
            throw new UncheckedIOException("kvstore.local.control-socket: cannot listen on " + socket, e);
        }
        path = socket;
        local.controlSocket(socket);
        Thread.ofPlatform().name("kvstore-control-accept").daemon().start(this::accept);
        log.info(
                "local control socket at {} ({}): same-host clients send reserve, commit, lease and release there",
                socket,
                local.group() == null ? "owner only" : "owner and group " + local.group());
    }

    /** Binds in a private directory, sets the socket file's mode and group, then moves it into place. */
    private static ServerSocketChannel bind(Path socket, @Nullable String group) throws IOException {
        Path parent = socket.getParent();
        Path staging = Files.createTempDirectory(
                parent,
                ".kvstore-control-",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path inside = staging.resolve("s");
        ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            channel.bind(UnixDomainSocketAddress.of(inside));
            Files.setPosixFilePermissions(inside, PosixFilePermissions.fromString("rw-------"));
            if (group != null) {
                Files.getFileAttributeView(inside, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                        .setGroup(FileSystems.getDefault()
                                .getUserPrincipalLookupService()
                                .lookupPrincipalByGroupName(group));
                Files.setPosixFilePermissions(inside, PosixFilePermissions.fromString("rw-rw----"));
            }
            Files.deleteIfExists(socket); // a socket of an earlier run of this very configuration
            Files.move(inside, socket, StandardCopyOption.ATOMIC_MOVE);
            return channel;
        } catch (IOException | RuntimeException e) {
            channel.close();
            Files.deleteIfExists(inside);
            throw e;
        } finally {
            Files.deleteIfExists(staging);
        }
    }

    private void accept() {
        ServerSocketChannel s = server;
        long n = 0;
        while (s != null && s.isOpen()) {
            SocketChannel channel;
            try {
                channel = s.accept();
            } catch (AsynchronousCloseException e) {
                return; // stopped
            } catch (IOException e) {
                log.warn("local control socket: accept failed: {}", e.toString());
                continue;
            }
            if (open.size() >= maxConnections) {
                ControlSession.refuseBusy(channel, maxConnections);
                long unlogged = refusals.occurred();
                if (unlogged >= 0) {
                    log.warn(
                            "local control socket: {} connections open, the most it serves"
                                    + " (kvstore.local.control-max-connections); refusing new ones with 503{}",
                            maxConnections,
                            IntervalLog.more(unlogged, "connection(s) refused"));
                }
                continue;
            }
            ControlSession session = new ControlSession(
                    channel, service, tokens, problems, validator, maxFrame, malformedFrames, writers);
            open.put(channel, session);
            deadlines.schedule(
                    () -> {
                        if (!session.authenticated()) {
                            closeQuietly(channel); // the session's read ends and it returns
                        }
                    },
                    helloTimeout.toMillis(),
                    TimeUnit.MILLISECONDS);
            Thread.ofPlatform().daemon().name("kvstore-control-", n++).start(() -> {
                try {
                    session.run();
                } finally {
                    open.remove(channel);
                }
            });
        }
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            log.debug("local control socket: closing a connection failed: {}", e.toString());
        }
    }

    @Override
    public void stop() {
        ServerSocketChannel s = server;
        Path p = path;
        server = null;
        if (s == null) {
            return;
        }
        local.controlSocket(null);
        try {
            s.close();
            for (SocketChannel c : open.keySet()) {
                c.close();
            }
            if (p != null) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            log.warn("local control socket: closing failed: {}", e.toString());
        }
    }

    @Override
    public boolean isRunning() {
        return server != null;
    }

    /** The connections served now (each holds a thread and one of {@code control-max-connections}). */
    public int connections() {
        return open.size();
    }

    /** The socket's path while it listens, else null. */
    public @Nullable Path path() {
        return path;
    }
}
