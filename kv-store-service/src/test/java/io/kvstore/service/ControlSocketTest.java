package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.service.local.ControlFrames;
import io.kvstore.service.local.ControlFrames.Reader;
import io.kvstore.service.local.ControlFrames.Writer;
import io.kvstore.service.local.ControlSocketServer;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The local control socket over a real Unix socket: it is advertised by {@code GET /v1/local} with the tier
 * file's permissions; a connection must authenticate with a bearer token as HTTP does; reserve, commit,
 * lease and release move blocks byte-exact through the tier; tenant rules and refusals are HTTP's (same
 * status, title, field), and a malformed frame closes only its own connection.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.local.enabled=true",
            "kvstore.tiers.dram.capacity=8MB",
            "kvstore.tiers.dram.slab-size=1MB",
            "kvstore.tiers.nvme.enabled=false",
            "kvstore.tokens[0].tenant=alpha",
            "kvstore.tokens[0].token=alpha-token-0123456789",
            "kvstore.tokens[0].write=a-*",
            "kvstore.tokens[0].one-sided=true",
            "kvstore.tokens[1].tenant=beta",
            "kvstore.tokens[1].token=beta-token-0123456789",
            "kvstore.tokens[1].write=*",
            "kvstore.tokens[1].one-sided=true",
            "kvstore.tokens[2].tenant=alpha",
            "kvstore.tokens[2].token=alpha-reader-0123456789",
            "kvstore.tokens[2].read=a-*",
            "kvstore.admin-token=admin-secret-0123456789",
            "kvstore.local.control-max-connections=8",
            "kvstore.local.control-hello-timeout=1s"
        })
class ControlSocketTest {

    static final String ALPHA = "alpha-token-0123456789";
    static final String BETA = "beta-token-0123456789";
    static final String[] ALPHA_HEADER = {"Authorization", "Bearer " + ALPHA};
    static final String[] BETA_HEADER = {"Authorization", "Bearer " + BETA};
    static final String[] ADMIN_HEADER = {"Authorization", "Bearer admin-secret-0123456789"};

    @LocalServerPort
    int port;

    @Autowired
    ControlSocketServer server;

    private Http http() {
        return new Http(port);
    }

    /** One connection to the socket; each call sends a frame and reads the answer. */
    static final class Connection implements AutoCloseable {
        final SocketChannel channel;

        Connection(Path socket) throws IOException {
            channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.connect(UnixDomainSocketAddress.of(socket));
        }

        Reader call(Writer frame) throws IOException {
            return send(frame.finish());
        }

        Reader send(ByteBuffer frame) throws IOException {
            while (frame.hasRemaining()) {
                channel.write(frame);
            }
            return receive();
        }

        /** The next frame the service sends. */
        Reader receive() throws IOException {
            ByteBuffer header = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            readFully(header);
            ByteBuffer body = ByteBuffer.allocate(header.getInt(0));
            readFully(body);
            return new Reader(body.flip());
        }

        /** Whether the service closed the connection (a read sees its end). */
        boolean closedByService() throws IOException {
            return channel.read(ByteBuffer.allocate(1)) < 0;
        }

        private void readFully(ByteBuffer b) throws IOException {
            while (b.hasRemaining()) {
                if (channel.read(b) < 0) {
                    throw new IOException("the service closed the connection");
                }
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /** An error frame's fields. */
    record Problem(int status, String title, String detail, String field) {}

    private static Problem problem(Reader r) {
        byte kind = r.kind();
        assertThat(kind).as("an error frame").isEqualTo(ControlFrames.ERROR);
        int status = r.u16();
        return new Problem(status, r.str(), r.str(), r.str());
    }

    private Path socket() throws Exception {
        var view = http().get("/v1/local", ALPHA_HEADER);
        assertThat(view.statusCode()).as(view.body()).isEqualTo(200);
        return Path.of(TenantApiTest.field(view.body(), "controlSocket"));
    }

    private Connection hello(String token) throws Exception {
        Connection c = new Connection(socket());
        Reader ok = c.call(new Writer(ControlFrames.HELLO).str(token));
        assertThat(ok.kind()).isEqualTo(ControlFrames.OK);
        assertThat(ok.str()).isNotEmpty(); // the region id
        return c;
    }

    private void declare(String ns, String[] header) throws Exception {
        var declared = http().json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"), header);
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
    }

    private static Writer reserve(String ns, List<BlockHash> hashes) {
        Writer w = new Writer(ControlFrames.RESERVE).str(ns).i64(-1).u32(hashes.size());
        for (int i = 0; i < hashes.size(); i++) {
            w.hash(hashes.get(i).hex()).hash(i == 0 ? null : hashes.get(i - 1).hex());
        }
        return w;
    }

    @Test
    void theSocketIsAdvertisedWithTheTierFilesPermissions() throws Exception {
        Path socket = socket();
        var view = http().get("/v1/local", ALPHA_HEADER).body();
        Path file = Path.of(TenantApiTest.field(view, "path"));
        assertThat(socket).isEqualTo(file.resolveSibling(file.getFileName() + ".sock"));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)))
                .isEqualTo("rw-------");
        assertThat(Files.getOwner(socket)).isEqualTo(Files.getOwner(file));
    }

    @Test
    void aHelloNamingItsClientIsToldItsReservationsAreFencedAndAHelloWithoutIsAnsweredAsBefore() throws Exception {
        try (Connection named = new Connection(socket());
                Connection plain = new Connection(socket())) {
            Reader ok = named.call(new Writer(ControlFrames.HELLO).str(ALPHA).str("client-7f3a"));
            assertThat(ok.kind()).isEqualTo(ControlFrames.OK);
            assertThat(ok.str()).isNotEmpty(); // the region id
            assertThat(ok.kind()).as("fenced").isEqualTo((byte) 1);
            ok.end();

            Reader old = plain.call(new Writer(ControlFrames.HELLO).str(ALPHA));
            assertThat(old.kind()).isEqualTo(ControlFrames.OK);
            assertThat(old.str()).isNotEmpty();
            old.end(); // nothing an older client would not expect
        }
    }

    @Test
    void aConnectionWithoutValidCredentialsGetsAnErrorFrameAndIsClosed() throws Exception {
        try (Connection c = new Connection(socket())) {
            Problem p = problem(c.call(new Writer(ControlFrames.HELLO).str("")));
            assertThat(p.status()).isEqualTo(401);
            assertThat(c.closedByService()).isTrue();
        }
        try (Connection c = new Connection(socket())) {
            Problem p = problem(c.call(new Writer(ControlFrames.HELLO).str("not-a-token-at-all")));
            assertThat(p.status()).isEqualTo(403);
            assertThat(p.detail()).contains("not a valid API token");
            assertThat(c.closedByService()).isTrue();
        }
        try (Connection c = new Connection(socket())) { // a token without the one-sided grant
            Problem p = problem(c.call(new Writer(ControlFrames.HELLO).str("alpha-reader-0123456789")));
            assertThat(p.status()).isEqualTo(403);
            assertThat(p.detail()).contains("oneSided");
            assertThat(c.closedByService()).isTrue();
        }
        try (Connection c = new Connection(socket())) { // a call before HELLO
            declare("a-early", ALPHA_HEADER);
            Problem p = problem(c.call(reserve("a-early", TestLayout.hashes(TestLayout.tokens(1, 1)))));
            assertThat(p.status()).isEqualTo(401);
            assertThat(c.closedByService()).isTrue();
        }
    }

    @Test
    void aConnectionWhoseTokenIsRevokedIsClosedAndOtherConnectionsGoOn() throws Exception {
        String[] admin = {"Authorization", "Bearer admin-secret-0123456789"};
        var issued = http().json(
                        "POST", "/admin/tokens", "{\"tenant\":\"alpha\",\"write\":[\"a-*\"],\"oneSided\":true}", admin);
        assertThat(issued.statusCode()).as(issued.body()).isEqualTo(201);
        declare("a-revoked", ALPHA_HEADER);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(2, 31));
        try (Connection c = hello(TenantApiTest.field(issued.body(), "token"))) {
            Reader before = c.call(reserve("a-revoked", hashes.subList(0, 1)));
            assertThat(before.kind()).isEqualTo(ControlFrames.OK);
            var revoked = http().send(
                            "DELETE", "/admin/tokens/" + TenantApiTest.field(issued.body(), "id"), null, null, admin);
            assertThat(revoked.statusCode()).as(revoked.body()).isEqualTo(204);
            // closed at the revocation, before it sends another frame (one sent meanwhile is refused 401)
            assertThat(awaitClosedByService(c)).isTrue();
        }
        try (Connection other = hello(ALPHA)) { // other connections go on
            assertThat(other.call(reserve("a-revoked", hashes.subList(1, 2))).kind())
                    .isEqualTo(ControlFrames.OK);
        }
    }

    /** What a RESERVE answers a client that named itself: its single slot and whether it must send CRC32Cs. */
    record Granted(String reservationId, long offset, boolean writerChecksums) {}

    private static Granted granted(Reader r) {
        assertThat(r.kind()).isEqualTo(ControlFrames.OK);
        r.str(); // region id
        String id = r.str();
        r.i64();
        assertThat(r.u32()).isEqualTo(1);
        r.hash();
        long offset = r.i64();
        r.u32();
        assertThat(r.u32()).isZero(); // none stored before
        boolean checksums = r.kind() == 1;
        r.end();
        return new Granted(id, offset, checksums);
    }

    private Connection named(String token, String clientId) throws Exception {
        Connection c = new Connection(socket());
        Reader ok = c.call(new Writer(ControlFrames.HELLO).str(token).str(clientId));
        assertThat(ok.kind()).isEqualTo(ControlFrames.OK);
        ok.str();
        assertThat(ok.kind()).as("fenced").isEqualTo((byte) 1);
        return c;
    }

    private static Writer reserve(String ns, BlockHash hash, long timeoutSeconds) {
        return new Writer(ControlFrames.RESERVE)
                .str(ns)
                .i64(timeoutSeconds)
                .u32(1)
                .hash(hash.hex())
                .hash(null);
    }

    /** A token of its own tenant, so that tenant's reserved bytes are this test's alone. */
    private String issue(String tenant, String namespaces) throws Exception {
        var issued = http().json(
                        "POST",
                        "/admin/tokens",
                        "{\"tenant\":\"" + tenant + "\",\"write\":[\"" + namespaces + "\"],\"oneSided\":true}",
                        ADMIN_HEADER);
        assertThat(issued.statusCode()).as(issued.body()).isEqualTo(201);
        return issued.body();
    }

    /** The tenant's bytes in reservations as {@code GET /admin/tenants} reports them (fenced slots included). */
    private long reservedBy(String tenant) throws Exception {
        var r = http().get("/admin/tenants", ADMIN_HEADER);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        for (JsonNode t : JsonMapper.builder().build().readTree(r.body()).path("tenants")) {
            if (t.path("tenant").asString().equals(tenant)) {
                return t.path("reserved").asLong();
            }
        }
        return 0;
    }

    /** Waits up to 30 s for the tenant's reserved bytes to fall to {@code bytes}; the last count seen. */
    private long awaitReservedBy(String tenant, long bytes) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        long now = reservedBy(tenant);
        while (now != bytes && System.nanoTime() < deadline) {
            Thread.sleep(100);
            now = reservedBy(tenant);
        }
        return now;
    }

    @Test
    void aReservationWhoseConnectionClosedBeforeItWasNamedGoesAtItsExpiryAndItsSlotAsksForChecksums() throws Exception {
        String issued = issue("dropper", "d-*");
        String token = TenantApiTest.field(issued, "token");
        declare("d-dropped", new String[] {"Authorization", "Bearer " + token});
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 41)).getFirst();
        try (Connection anchor = named(token, "client-dropper")) {
            Granted dropped;
            try (Connection call = named(token, "client-dropper")) {
                // the answer reaches the socket, but the client gave up waiting: it closes the connection unread
                dropped = granted(call.call(reserve("d-dropped", hash, 1)));
                assertThat(reservedBy("dropper")).isEqualTo(TestLayout.BLOCK_BYTES);
            }
            // the client (its anchor) stays connected but can never name the reservation: at its expiry the
            // slot goes back and the tenant's reserved quota with it, not at the client's exit
            assertThat(awaitReservedBy("dropper", 0))
                    .as("bytes still held for a reservation no one will name")
                    .isZero();
            // whoever gets the slot next may meet a late copy there, so it is told to send its CRC32Cs
            Granted next = granted(anchor.call(reserve("d-dropped", hash, -1)));
            assertThat(next.offset()).as("the freed slot is reused first").isEqualTo(dropped.offset());
            assertThat(next.writerChecksums()).isTrue();
            cancel(anchor, next);
        }
    }

    @Test
    void aMalformedFrameOnOneConnectionLiftsNoFenceOfTheClientsOtherConnections() throws Exception {
        String issued = issue("stumbler", "s-*");
        String token = TenantApiTest.field(issued, "token");
        declare("s-fenced", new String[] {"Authorization", "Bearer " + token});
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 43)).getFirst();
        long expiredBefore = ExpiredReservations.count(http());
        try (Connection anchor = named(token, "client-stumbler")) {
            Granted stalled = granted(anchor.call(reserve("s-fenced", hash, 1))); // expires in 1 s, never named
            try (Connection call = named(token, "client-stumbler")) {
                Problem bad = problem(call.call(new Writer((byte) 99)));
                assertThat(bad.title()).isEqualTo("Malformed frame");
                assertThat(call.closedByService()).isTrue();
            }
            // expired by the sweep: the connection that granted it is open, so its slot stays fenced
            ExpiredReservations.await(http(), expiredBefore + 1);
            assertThat(reservedBy("stumbler"))
                    .as("the stalled reservation's slot, fenced for the connection still open")
                    .isEqualTo(TestLayout.BLOCK_BYTES);
            // the client names it once its copy is done: gone already (404), and its fenced slot freed
            assertThat(problem(anchor.call(new Writer(ControlFrames.CANCEL).str(stalled.reservationId())))
                            .status())
                    .isEqualTo(404);
            assertThat(awaitReservedBy("stumbler", 0)).isZero();
        }
    }

    @Test
    void aSlotLeftByADroppedCallConnectionAsksForNoChecksumsOnceItsClientClosedEveryConnection() throws Exception {
        String issued = issue("leaver", "l-*");
        String token = TenantApiTest.field(issued, "token");
        declare("l-left", new String[] {"Authorization", "Bearer " + token});
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 47)).getFirst();
        Granted dropped;
        try (Connection anchor = named(token, "client-leaver")) {
            try (Connection call = named(token, "client-leaver")) {
                dropped = granted(call.call(reserve("l-left", hash, 1))); // closed before it was named
            }
            assertThat(awaitReservedBy("leaver", 0)).isZero();
            try (Connection other = named(token, "client-leaver-next")) {
                Granted next = granted(other.call(reserve("l-left", hash, -1)));
                assertThat(next.offset()).as("the freed slot is reused first").isEqualTo(dropped.offset());
                assertThat(next.writerChecksums())
                        .as("the client that left it is still connected")
                        .isTrue();
                cancel(other, next);
            }
        } // the client closed every connection: its process writes no more

        assertThat(nextGrantOf(token, "client-leaver-next", "l-left", hash, dropped)
                        .writerChecksums())
                .as("the only writer that left the slot is gone: no CRC32Cs asked for it")
                .isFalse();
    }

    /**
     * The grant of {@code dropped}'s slot to another client ({@code clientId}), reserved again every 100 ms for up to
     * 30 s until it asks for no CRC32Cs (the writer that left the slot is seen gone), or the last one; each cancelled.
     */
    private Granted nextGrantOf(String token, String clientId, String ns, BlockHash hash, Granted dropped)
            throws Exception {
        try (Connection other = named(token, clientId)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            Granted next;
            do {
                Thread.sleep(100);
                next = granted(other.call(reserve(ns, hash, -1)));
                cancel(other, next);
                assertThat(next.offset()).as("the freed slot is reused first").isEqualTo(dropped.offset());
            } while (next.writerChecksums() && System.nanoTime() < deadline);
            return next;
        }
    }

    @Test
    void aSlotLeftByAClientKvstoreClosedAConnectionOfAsksForNoChecksumsOnceTheClientClosedTheRest() throws Exception {
        String issued = issue("stumbling-leaver", "sl-*");
        String token = TenantApiTest.field(issued, "token");
        declare("sl-left", new String[] {"Authorization", "Bearer " + token});
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 53)).getFirst();
        Granted dropped;
        try (Connection anchor = named(token, "client-stumbling-leaver")) {
            try (Connection call = named(token, "client-stumbling-leaver")) {
                dropped = granted(call.call(reserve("sl-left", hash, 1))); // never named
                assertThat(problem(call.call(new Writer((byte) 99))).title()).isEqualTo("Malformed frame");
                assertThat(call.closedByService()).isTrue();
            }
            // kvstore closed the connection that granted it: it goes at its expiry, remembered
            assertThat(awaitReservedBy("stumbling-leaver", 0)).isZero();
        } // then the client closed its last connection itself: its process writes no more

        assertThat(nextGrantOf(token, "client-stumbling-leaver-next", "sl-left", hash, dropped)
                        .writerChecksums())
                .as("the client that left the slot closed every connection left open: no CRC32Cs asked for it")
                .isFalse();
    }

    /** Stores {@code hash} (as a first block) over a connection without a client id. */
    private void storeOne(String ns, BlockHash hash) throws Exception {
        try (Connection c = hello(ALPHA)) {
            Reader r = c.call(reserve(ns, List.of(hash)));
            assertThat(r.kind()).isEqualTo(ControlFrames.OK);
            r.str();
            String reservation = r.str();
            Reader committed = c.call(
                    new Writer(ControlFrames.COMMIT).str(ns).str(reservation).u32(0));
            assertThat(committed.kind()).isEqualTo(ControlFrames.OK);
            assertThat(hexes(committed)).containsExactly(hash.hex());
        }
    }

    private static Writer lease(String ns, BlockHash hash) {
        return new Writer(ControlFrames.LEASE).str(ns).i64(-1).u32(1).hash(hash.hex());
    }

    private static String leaseId(Reader r) {
        assertThat(r.kind()).isEqualTo(ControlFrames.OK);
        r.str();
        String id = r.str();
        assertThat(id).isNotEmpty();
        return id;
    }

    /** The status {@code DELETE} of the block answers: 409 while a lease holds it. */
    private int deleteBlock(String ns, BlockHash hash) throws Exception {
        return http().send("DELETE", "/v1/namespaces/" + ns + "/blocks/" + hash.hex(), null, null, ALPHA_HEADER)
                .statusCode();
    }

    /** Waits up to 30 s until an answer is on the connection's socket, leaving it unread. */
    private static void awaitReadable(Connection c) throws IOException {
        c.channel.configureBlocking(false);
        try (Selector selector = Selector.open()) {
            c.channel.register(selector, SelectionKey.OP_READ);
            assertThat(selector.select(TimeUnit.SECONDS.toMillis(30)))
                    .as("an answer on the socket within 30 s")
                    .isOne();
        }
    }

    /** Waits up to 30 s for the lease to be unknown (released); its last status. */
    private int awaitLeaseGone(String leaseId) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        int status = http().get("/v1/leases/" + leaseId, ALPHA_HEADER).statusCode();
        while (status != 404 && System.nanoTime() < deadline) {
            Thread.sleep(100);
            status = http().get("/v1/leases/" + leaseId, ALPHA_HEADER).statusCode();
        }
        return status;
    }

    @Test
    void aLeaseWhoseAnswerWasNeverReadIsReleasedWhenItsConnectionCloses() throws Exception {
        declare("a-unread", ALPHA_HEADER);
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 59)).getFirst();
        storeOne("a-unread", hash);
        try (Connection anchor = named(ALPHA, "client-unread")) {
            Connection call = named(ALPHA, "client-unread");
            ByteBuffer frame = lease("a-unread", hash).finish();
            while (frame.hasRemaining()) {
                call.channel.write(frame);
            }
            awaitReadable(call); // the answer reaches the client's socket (a delete before the lease would succeed)
            assertThat(deleteBlock("a-unread", hash)).as("leased").isEqualTo(409);
            call.close(); // the client gave up waiting: it never learns the lease, so it cannot release it
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            int status = deleteBlock("a-unread", hash);
            while (status == 409 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                status = deleteBlock("a-unread", hash);
            }
            assertThat(status)
                    .as("the block is held no longer by a lease no one can release (the client stays connected)")
                    .isEqualTo(204);
        }
    }

    @Test
    void aClientsLeasesMayBeReleasedOverAnyOfItsConnectionsAndGoWhenItClosesEveryConnection() throws Exception {
        declare("a-lessee", ALPHA_HEADER);
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 61)).getFirst();
        storeOne("a-lessee", hash);
        String held;
        String unreleased;
        try (Connection anchor = named(ALPHA, "client-lessee")) {
            String first;
            try (Connection call = named(ALPHA, "client-lessee")) {
                first = leaseId(call.call(lease("a-lessee", hash)));
            } // read, then that connection closed (a later call on it timed out, say)
            assertThat(anchor.call(new Writer(ControlFrames.RELEASE).str(first)).kind())
                    .as("released over another connection of the client")
                    .isEqualTo(ControlFrames.OK);
            held = leaseId(anchor.call(lease("a-lessee", hash)));
            try (Connection call = named(ALPHA, "client-lessee")) {
                unreleased = leaseId(call.call(lease("a-lessee", hash)));
            }
            assertThat(http().get("/v1/leases/" + held, ALPHA_HEADER).statusCode())
                    .as("held while the client is connected")
                    .isEqualTo(200);
        } // the client closed every connection without releasing (its process was killed mid-copy)
        assertThat(awaitLeaseGone(held)).as("a lease of a client gone").isEqualTo(404);
        assertThat(awaitLeaseGone(unreleased)).as("a lease of a client gone").isEqualTo(404);
        assertThat(deleteBlock("a-lessee", hash)).isEqualTo(204);
    }

    private static void cancel(Connection c, Granted g) throws IOException {
        assertThat(c.call(new Writer(ControlFrames.CANCEL).str(g.reservationId()))
                        .kind())
                .isEqualTo(ControlFrames.OK);
    }

    @Test
    void revokingATokenClosesItsIdleConnectionsAndFreesTheirPlaces() throws Exception {
        String issued = issue("idle-revokee", "i-*");
        String token = TenantApiTest.field(issued, "token");
        try (Connection anchor = named(token, "client-idle-revokee");
                Connection unnamed = hello(token);
                Connection other = hello(ALPHA)) {
            int before = server.connections();

            var revoked = http().send(
                            "DELETE", "/admin/tokens/" + TenantApiTest.field(issued, "id"), null, null, ADMIN_HEADER);
            assertThat(revoked.statusCode()).as(revoked.body()).isEqualTo(204);

            // neither sends another frame, yet kvstore closes both at the revocation
            assertThat(awaitClosedByService(anchor))
                    .as("the idle anchor closed by kvstore")
                    .isTrue();
            assertThat(awaitClosedByService(unnamed))
                    .as("a connection without a client id too")
                    .isTrue();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (server.connections() > before - 2 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(server.connections()).as("their places are free").isLessThanOrEqualTo(before - 2);
            assertThat(other.call(new Writer(ControlFrames.CANCEL).str("none")).kind())
                    .as("another token's connection stays open")
                    .isEqualTo(ControlFrames.ERROR);
        }
    }

    /** Waits up to 30 s for the service to close the connection; whether it did. */
    private static boolean awaitClosedByService(Connection c) throws Exception {
        c.channel.configureBlocking(false);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (c.channel.read(ByteBuffer.allocate(1)) < 0) {
                return true;
            }
            Thread.sleep(20);
        }
        return false;
    }

    @Test
    void revokingAClientsTokenEndsItsFencesAndGivesItsReservedQuotaBack() throws Exception {
        String issued = issue("revokee", "r-*");
        String token = TenantApiTest.field(issued, "token");
        declare("r-fenced", new String[] {"Authorization", "Bearer " + token});
        declare("a-after-revoke", ALPHA_HEADER);
        BlockHash hash = TestLayout.hashes(TestLayout.tokens(1, 43)).getFirst();
        long expiredBefore = ExpiredReservations.count(http());
        try (Connection anchor = named(token, "client-revokee");
                Connection call = named(token, "client-revokee")) {
            Granted stalled = granted(call.call(reserve("r-fenced", hash, 1)));
            ExpiredReservations.await(http(), expiredBefore + 1); // expired while its client is connected: fenced
            assertThat(reservedBy("revokee")).isEqualTo(TestLayout.BLOCK_BYTES);

            var revoked = http().send(
                            "DELETE", "/admin/tokens/" + TenantApiTest.field(issued, "id"), null, null, ADMIN_HEADER);
            assertThat(revoked.statusCode()).as(revoked.body()).isEqualTo(204);
            // its connections stay open and idle, yet the revoked client's fences end
            assertThat(awaitReservedBy("revokee", 0))
                    .as("bytes still fenced for a revoked token")
                    .isZero();
            try (Connection other = named(ALPHA, "client-after-revoke")) {
                Granted next = granted(other.call(reserve("a-after-revoke", hash, -1)));
                assertThat(next.offset()).as("the freed slot is reused first").isEqualTo(stalled.offset());
                assertThat(next.writerChecksums())
                        .as("the revoked client may still be copying there")
                        .isTrue();
            }
        }
    }

    @Test
    void blocksStoredOverTheSocketAreByteExactThroughTheTierAndLeasedBack() throws Exception {
        declare("a-round", ALPHA_HEADER);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(3, 11));
        List<byte[]> blocks = TestLayout.blocks(3, 12);
        var view = http().get("/v1/local", ALPHA_HEADER).body();
        Path file = Path.of(TenantApiTest.field(view, "path"));
        try (Connection c = hello(ALPHA);
                Arena arena = Arena.ofConfined();
                FileChannel fc = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment tier = fc.map(FileChannel.MapMode.READ_WRITE, 0, fc.size(), arena);
            Reader r = c.call(reserve("a-round", hashes));
            assertThat(r.kind()).isEqualTo(ControlFrames.OK);
            r.str(); // region id
            String reservation = r.str();
            assertThat(r.i64()).isGreaterThan(System.currentTimeMillis()); // expires ahead
            int slots = (int) r.u32();
            assertThat(slots).isEqualTo(3);
            for (int i = 0; i < slots; i++) {
                String hash = r.hash();
                long offset = r.i64();
                assertThat(r.u32()).isEqualTo(TestLayout.BLOCK_BYTES);
                byte[] bytes = blocks.get(indexOf(hashes, hash));
                MemorySegment.copy(bytes, 0, tier, ValueLayout.JAVA_BYTE, offset, bytes.length);
            }
            assertThat(r.u32()).isZero(); // none stored before
            r.end();

            Reader committed = c.call(new Writer(ControlFrames.COMMIT)
                    .str("a-round")
                    .str(reservation)
                    .u32(0));
            assertThat(committed.kind()).isEqualTo(ControlFrames.OK);
            List<String> done = hexes(committed);
            assertThat(done).containsExactlyInAnyOrderElementsOf(hexes(hashes));
            assertThat(hexes(committed)).isEmpty();
            assertThat(committed.u32()).isZero(); // none failed

            // what HTTP serves is what was copied in over the socket's slots
            // (served only after its CRC32C check against the checksum taken at commit)
            var fetched = java.net.http.HttpClient.newHttpClient()
                    .send(
                            java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                                            "http://127.0.0.1:" + port + "/v1/namespaces/a-round/blocks:fetch"))
                                    .header("Content-Type", "application/json")
                                    .header(ALPHA_HEADER[0], ALPHA_HEADER[1])
                                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(
                                            "{\"blockHashes\":" + Http.hexList(hashes) + "}"))
                                    .build(),
                            java.net.http.HttpResponse.BodyHandlers.ofByteArray());
            assertThat(fetched.statusCode()).isEqualTo(200);
            for (byte[] block : blocks) {
                assertThat(indexOf(fetched.body(), block))
                        .as("a stored block in the fetch answer")
                        .isNotNegative();
            }

            Writer lease =
                    new Writer(ControlFrames.LEASE).str("a-round").i64(-1).u32(hashes.size());
            hashes.forEach(h -> lease.hash(h.hex()));
            Reader leased = c.call(lease);
            assertThat(leased.kind()).isEqualTo(ControlFrames.OK);
            leased.str();
            String leaseId = leased.str();
            assertThat(leaseId).isNotEmpty();
            leased.i64();
            assertThat(leased.u32()).isEqualTo(3);
            for (int i = 0; i < 3; i++) {
                assertThat(leased.hash()).isEqualTo(hashes.get(i).hex());
                long offset = leased.i64();
                int length = (int) leased.u32();
                long crc = leased.i64();
                byte[] out = new byte[length];
                MemorySegment.copy(tier, ValueLayout.JAVA_BYTE, offset, out, 0, length);
                assertThat(out).isEqualTo(blocks.get(i));
                java.util.zip.CRC32C want = new java.util.zip.CRC32C();
                want.update(blocks.get(i));
                assertThat(crc).isEqualTo(want.getValue());
            }
            // a lease blocks the delete until it is released over the socket
            assertThat(http().send(
                                    "DELETE",
                                    "/v1/namespaces/a-round/blocks/"
                                            + hashes.getFirst().hex(),
                                    null,
                                    null,
                                    ALPHA_HEADER)
                            .statusCode())
                    .isEqualTo(409);
            assertThat(c.call(new Writer(ControlFrames.RELEASE).str(leaseId)).kind())
                    .isEqualTo(ControlFrames.OK);
            Problem again = problem(c.call(new Writer(ControlFrames.RELEASE).str(leaseId)));
            assertThat(again.status()).isEqualTo(404);
            // a refused call leaves the connection open
            assertThat(c.call(new Writer(ControlFrames.RESERVE)
                                    .str("a-round")
                                    .i64(-1)
                                    .u32(0))
                            .kind())
                    .isEqualTo(ControlFrames.ERROR);
            Reader cancelUnknown = c.call(new Writer(ControlFrames.CANCEL).str("no-such-reservation"));
            assertThat(problem(cancelUnknown).status()).isEqualTo(404);
        }
    }

    @Test
    void everyFramesNamespaceGoesThroughTheTenantCheck() throws Exception {
        declare("a-owned-by-beta", BETA_HEADER);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(1, 21));
        try (Connection alpha = hello(ALPHA)) {
            Problem p = problem(alpha.call(reserve("a-owned-by-beta", hashes)));
            assertThat(p.status()).isEqualTo(403);
            assertThat(p.title()).isEqualTo("Forbidden");
            assertThat(p.detail()).contains("tenant 'alpha'", "a-owned-by-beta");
            Problem lease = problem(alpha.call(new Writer(ControlFrames.LEASE)
                    .str("a-owned-by-beta")
                    .i64(-1)
                    .u32(1)
                    .hash(hashes.getFirst().hex())));
            assertThat(lease.status()).isEqualTo(403);
            // beta's reservation cannot be committed or cancelled by alpha
            try (Connection beta = hello(BETA)) {
                Reader r = beta.call(reserve("a-owned-by-beta", hashes));
                assertThat(r.kind()).isEqualTo(ControlFrames.OK);
                r.str();
                String reservation = r.str();
                Problem cancel = problem(alpha.call(new Writer(ControlFrames.CANCEL).str(reservation)));
                assertThat(cancel.status()).isEqualTo(403);
                assertThat(beta.call(new Writer(ControlFrames.CANCEL).str(reservation))
                                .kind())
                        .isEqualTo(ControlFrames.OK);
            }
            // the connection stays usable after refusals
            declare("a-mine", ALPHA_HEADER);
            assertThat(alpha.call(reserve("a-mine", hashes)).kind()).isEqualTo(ControlFrames.OK);
        }
    }

    @Test
    void refusalsCarryHttpsProblemFieldsAndAMalformedFrameClosesOnlyItsConnection() throws Exception {
        declare("a-shapes", ALPHA_HEADER);
        try (Connection c = hello(ALPHA);
                Connection other = hello(ALPHA)) {
            Problem empty = problem(c.call(
                    new Writer(ControlFrames.RESERVE).str("a-shapes").i64(-1).u32(0)));
            assertThat(empty)
                    .isEqualTo(new Problem(
                            400, "Invalid request", "blocks must list at least one block to reserve", "blocks"));
            Problem shortHash = problem(c.call(new Writer(ControlFrames.RESERVE)
                    .str("a-shapes")
                    .i64(-1)
                    .u32(1)
                    .hash("abcd")
                    .hash(null)));
            assertThat(shortHash.status()).isEqualTo(400);
            assertThat(shortHash.field()).isEqualTo("blocks[0].hash");
            Problem timeout = problem(c.call(reserve("a-shapes", TestLayout.hashes(TestLayout.tokens(1, 5)))
                    .i64(0)));
            assertThat(timeout.title()).isEqualTo("Malformed frame"); // bytes after the fields

            // that malformed frame closed c; other is untouched
            assertThat(c.closedByService()).isTrue();
            Problem unknownNs = problem(other.call(
                    new Writer(ControlFrames.LEASE).str("a-nope").i64(-1).u32(0)));
            assertThat(unknownNs.status()).isEqualTo(404);
            ByteBuffer truncated = ByteBuffer.allocate(9).order(ByteOrder.LITTLE_ENDIAN);
            truncated.putInt(5).put(ControlFrames.RESERVE).putInt(1000).flip(); // a name longer than the frame
            Problem cut = problem(other.send(truncated));
            assertThat(cut.status()).isEqualTo(400);
            assertThat(cut.title()).isEqualTo("Malformed frame");
            assertThat(other.closedByService()).isTrue();
        }
        try (Connection c = hello(ALPHA)) {
            Problem unknownKind = problem(c.call(new Writer((byte) 99)));
            assertThat(unknownKind.title()).isEqualTo("Malformed frame");
            assertThat(unknownKind.detail()).contains("unknown frame kind 99");
        }
    }

    /**
     * A seeded stream of mutated frames (valid frames of every kind with bytes flipped, cut short or run on, and
     * frames of random bytes), one connection each: every one is answered with a frame, an error frame never says
     * 500, and afterwards the socket still serves a store and a lease. Seed: {@code kvstore.control-fuzz-seed}.
     */
    @Test
    void aSeededStreamOfMutatedFramesIsAnsweredAndTheSocketGoesOn() throws Exception {
        long seed = Long.getLong("kvstore.control-fuzz-seed", 20261128L);
        var random = new java.util.Random(seed);
        declare("a-fuzz", ALPHA_HEADER);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(2, 61));
        List<ByteBuffer> templates = List.of(
                reserve("a-fuzz", hashes).finish(),
                new Writer(ControlFrames.COMMIT)
                        .str("a-fuzz")
                        .str("r-1")
                        .u32(1)
                        .i64(12345)
                        .finish(),
                new Writer(ControlFrames.CANCEL).str("a-fuzz").str("r-1").finish(),
                new Writer(ControlFrames.LEASE)
                        .str("a-fuzz")
                        .i64(5)
                        .u32(2)
                        .hash(hashes.get(0).hex())
                        .hash(hashes.get(1).hex())
                        .finish(),
                new Writer(ControlFrames.RELEASE).str("l-1").finish(),
                new Writer(ControlFrames.HELLO).str(ALPHA).str("fuzzer").finish());
        java.util.Map<Integer, Integer> statuses = new java.util.TreeMap<>();
        for (int i = 0; i < 300; i++) {
            byte[] body = mutated(templates.get(random.nextInt(templates.size())), random);
            ByteBuffer frame = ByteBuffer.allocate(4 + body.length).order(ByteOrder.LITTLE_ENDIAN);
            frame.putInt(body.length).put(body).flip();
            try (Connection c = hello(ALPHA)) {
                Reader answer = c.send(frame);
                byte kind = answer.kind();
                assertThat(kind).isIn(ControlFrames.OK, ControlFrames.ERROR);
                int status = kind == ControlFrames.ERROR ? answer.u16() : 200;
                statuses.merge(status, 1, Integer::sum);
                assertThat(status)
                        .as(
                                "seed %d, frame %d: kind %d, %d bytes",
                                seed, i, body.length > 0 ? body[0] : -1, body.length)
                        .isNotEqualTo(500)
                        .isBetween(200, 599);
            }
        }
        System.out.printf("control socket, 300 mutated frames (seed %d), answered by status: %s%n", seed, statuses);
        BlockHash kept = TestLayout.hashes(TestLayout.tokens(1, 62)).getFirst();
        storeOne("a-fuzz", kept);
        try (Connection c = hello(ALPHA)) {
            assertThat(leaseId(c.call(lease("a-fuzz", kept)))).isNotEmpty();
        }
    }

    /** The body of {@code template} (its frame without the length), mutated one of four ways. */
    private static byte[] mutated(ByteBuffer template, java.util.Random random) {
        byte[] body = new byte[template.remaining() - 4];
        template.duplicate().position(4).get(body);
        return switch (random.nextInt(4)) {
            case 0 -> { // bytes flipped, the kind kept
                for (int n = 1 + random.nextInt(4); n > 0 && body.length > 1; n--) {
                    body[1 + random.nextInt(body.length - 1)] ^= (byte) (1 + random.nextInt(255));
                }
                yield body;
            }
            case 1 -> java.util.Arrays.copyOf(body, 1 + random.nextInt(Math.max(1, body.length - 1))); // cut short
            case 2 -> { // run on with junk
                byte[] longer = java.util.Arrays.copyOf(body, body.length + 1 + random.nextInt(64));
                for (int j = body.length; j < longer.length; j++) {
                    longer[j] = (byte) random.nextInt(256);
                }
                yield longer;
            }
            default -> { // random bytes behind a random kind
                byte[] junk = new byte[1 + random.nextInt(96)];
                random.nextBytes(junk);
                yield junk;
            }
        };
    }

    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void aClientSendingMalformedFramesAgainAndAgainGetsAtMostALogLineAMinute(CapturedOutput log) throws Exception {
        for (int i = 0; i < 50; i++) {
            try (Connection c = hello(ALPHA)) {
                assertThat(problem(c.call(new Writer((byte) 99))).title()).isEqualTo("Malformed frame");
                assertThat(c.closedByService()).isTrue();
            }
        }
        // (an earlier test's malformed frame may have had this minute's line)
        assertThat(log.getAll().lines().filter(l -> l.contains("after a malformed frame")))
                .as("lines for 50 connections closed after a malformed frame")
                .hasSizeLessThanOrEqualTo(1);
    }

    private static int indexOf(List<BlockHash> hashes, String hex) {
        for (int i = 0; i < hashes.size(); i++) {
            if (hashes.get(i).hex().equals(hex)) {
                return i;
            }
        }
        throw new AssertionError("no block " + hex);
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private static List<String> hexes(Reader r) {
        int n = (int) r.u32();
        List<String> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(r.hash());
        }
        return out;
    }

    private static List<String> hexes(List<BlockHash> hashes) {
        return hashes.stream().map(BlockHash::hex).toList();
    }

    @Test
    void aConnectionThatNeverSendsItsCredentialsIsClosedAfterTheHelloTimeout() throws Exception {
        try (Connection idle = new Connection(socket())) {
            long start = System.nanoTime();
            boolean closed = CompletableFuture.supplyAsync(() -> {
                        try {
                            return idle.closedByService();
                        } catch (IOException e) {
                            return true; // reset by the service: closed as well
                        }
                    })
                    .get(30, TimeUnit.SECONDS);
            assertThat(closed).isTrue();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(900));
        }
        try (Connection late = hello(ALPHA)) { // one that authenticates in time stays open past the deadline
            Thread.sleep(1500);
            declare("a-late", ALPHA_HEADER);
            Reader r = late.call(reserve("a-late", TestLayout.hashes(TestLayout.tokens(1, 5))));
            assertThat(r.kind()).isEqualTo(ControlFrames.OK);
        }
    }

    @Test
    void beyondTheMostConnectionsANewOneIsAnswered503AndClosedUntilOneEnds() throws Exception {
        List<Connection> held = new java.util.ArrayList<>();
        try {
            // earlier tests' connections may still be ending on the service's side: fill up to the limit
            while (true) {
                Connection c = new Connection(socket());
                Reader first;
                try {
                    first = c.call(new Writer(ControlFrames.HELLO).str(ALPHA));
                } catch (IOException refusedBeforeHello) {
                    first = null; // refused and closed before our HELLO went out
                }
                if (first == null || first.kind() != ControlFrames.OK) {
                    c.close();
                    assertThat(held).hasSizeLessThanOrEqualTo(8).hasSizeGreaterThanOrEqualTo(6);
                    break;
                }
                held.add(c);
                assertThat(held).hasSizeLessThanOrEqualTo(8);
            }
            try (Connection refused = new Connection(socket())) {
                Problem p = problem(refused.receive());
                assertThat(p.status()).isEqualTo(503);
                assertThat(p.title()).isEqualTo("Too many control connections");
                assertThat(p.detail()).contains("kvstore.local.control-max-connections");
                assertThat(refused.closedByService()).isTrue();
            }
            held.remove(0).close();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            Connection again = null;
            while (again == null) {
                try {
                    again = hello(ALPHA);
                } catch (IOException | AssertionError stillFull) {
                    assertThat(System.nanoTime()).as("a slot freed within 30 s").isLessThan(deadline);
                    Thread.sleep(50);
                }
            }
            held.add(again);
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
    }
}
