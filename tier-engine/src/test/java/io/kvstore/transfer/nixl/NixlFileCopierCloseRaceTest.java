package io.kvstore.transfer.nixl;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.ffm.libc.LibC;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.nixl.NixlBackendProbe;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link NixlFileCopier} closed while several threads read and write through the real POSIX backend: close
 * waits for the moves under way (each completes, byte for byte), a move refused by the closing copier fails
 * with an {@link IllegalStateException} that says it is closed and nothing else, and neither the memory of a
 * refused move nor the file changes once close returned (the backend holds no transfer past close).
 *
 * <p>Each thread owns two slices of the region: a source it writes to its own area of the file, and a
 * destination it reads the file's fixed pattern into, filled with a fresh pattern before each read.
 */
class NixlFileCopierCloseRaceTest {

    private static final long RACE_NANOS = TimeUnit.SECONDS.toNanos(3);
    private static final int MOVERS = 3;
    private static final long SPAN = 128 * 1024;
    /** Spans per move, scattered so that none coalesce: one request of {@code SPANS * SPAN} bytes. */
    private static final int SPANS = 4;

    private static final long MOVE = SPANS * SPAN;
    /** How long memory and file are watched for a late write once a move was refused or close returned. */
    private static final long QUIET_NANOS = TimeUnit.MILLISECONDS.toNanos(15);

    @TempDir
    Path dir;

    @Test
    void closeWaitsForTheMovesUnderWayAndRefusesTheRestWithoutLateWrites() throws Exception {
        NixlRequirement.assumeNixl(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        var posix = NixlBackendProbe.ofThisMachine().probe("POSIX");
        NixlRequirement.assumeNixl(posix.available(), () -> "skipped: " + posix.detail());
        long seed = Long.getLong("kvstore.nixl.race-seed", 20261203L);
        System.out.println("copier close race seed " + seed + " (-Dkvstore.nixl.race-seed to replay)");
        Random random = new Random(seed);
        // the file: per mover, an area its reads come from (a fixed pattern) and an area its writes go to
        Path path = dir.resolve("race.dat");
        long fileBytes = MOVERS * 2 * MOVE;
        try (FileChannel ch = FileChannel.open(
                        path, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Arena setup = Arena.ofConfined()) {
            MemorySegment pattern = setup.allocate(fileBytes, 8);
            Patterns.fill(pattern, seed | 1);
            ByteBuffer b = pattern.asByteBuffer();
            while (b.hasRemaining()) {
                ch.write(b, b.position());
            }
        }
        ConcurrentLinkedQueue<String> unexpected = new ConcurrentLinkedQueue<>();
        AtomicInteger completed = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        int rounds = 0;
        int fd = LibC.open(path.toString(), LibC.O_RDWR, 0644);
        try {
            long end = System.nanoTime() + RACE_NANOS;
            while (System.nanoTime() < end && unexpected.isEmpty()) {
                rounds++;
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment region = arena.allocate(MOVERS * 2 * MOVE, 4096);
                    NixlFileCopier copier = new NixlFileCopier(
                            "kvstore-copier-race-" + rounds, "POSIX", Nixl.DRAM_SEG, region, 0, Duration.ofSeconds(60));
                    NixlFileCopier.File file = copier.register(fd, fileBytes);
                    CountDownLatch ready = new CountDownLatch(MOVERS);
                    List<Thread> movers = new ArrayList<>();
                    for (int m = 0; m < MOVERS; m++) {
                        Mover mover = new Mover(copier, file, region, path, m, random.nextLong());
                        movers.add(Thread.ofPlatform().start(() -> mover.run(ready, completed, refused, unexpected)));
                    }
                    ready.await();
                    LockSupport.parkNanos(random.nextInt(3_000_000));
                    copier.close();
                    byte[] fileAtClose = readFile(path, fileBytes);
                    try {
                        copier.read(file, List.of(new TransferSpan(0, 0, SPAN)));
                        unexpected.add("round " + rounds + ": a move after close ran");
                    } catch (IllegalStateException e) {
                        if (!String.valueOf(e.getMessage()).contains("closed")) {
                            unexpected.add("round " + rounds + ": a move after close failed with " + describe(e));
                        }
                    } catch (RuntimeException e) {
                        unexpected.add("round " + rounds + ": a move after close failed with " + describe(e));
                    }
                    for (Thread mover : movers) {
                        mover.join();
                    }
                    LockSupport.parkNanos(QUIET_NANOS);
                    if (!java.util.Arrays.equals(readFile(path, fileBytes), fileAtClose)) {
                        unexpected.add("round " + rounds + ": the file changed after close returned");
                    }
                }
            }
        } finally {
            LibC.close(fd);
        }
        System.out.println(rounds + " rounds: " + completed + " moves completed, " + refused + " refused");
        assertThat(unexpected)
                .as("moves that failed other than by the closed refusal, or memory/file written after it")
                .isEmpty();
        assertThat(refused.get())
                .as("every mover was refused once the copier closed")
                .isEqualTo(rounds * MOVERS);
    }

    /**
     * Two closes while a write is under way: the one that finds the copier closing already returns only once the
     * write ended and the agent let go of the region, not at once (its caller could free the region meanwhile).
     * Each round writes a fresh pattern over the whole file; the second close's caller reads the file's end as
     * soon as close returns and must find the pattern there.
     */
    @Test
    void aSecondCloseReturnsOnlyOnceTheMoveUnderWayEnded() throws Exception {
        NixlRequirement.assumeNixl(Nixl.availability().available(), () -> "skipped: " + Nixl.availability());
        var posix = NixlBackendProbe.ofThisMachine().probe("POSIX");
        NixlRequirement.assumeNixl(posix.available(), () -> "skipped: " + posix.detail());
        long bytes = 64L << 20;
        long tail = 1L << 20;
        Path path = dir.resolve("second-close.dat");
        int fd = LibC.open(path.toString(), LibC.O_RDWR | LibC.O_CREAT, 0644);
        int conclusive = 0;
        try {
            for (int round = 1; round <= 20 && conclusive < 3; round++) {
                try (FileChannel ch = FileChannel.open(path, StandardOpenOption.WRITE)) {
                    ch.truncate(0);
                    ch.write(ByteBuffer.allocate(1), bytes - 1); // all zeros
                }
                try (Arena arena = Arena.ofShared()) {
                    MemorySegment region = arena.allocate(bytes, 4096);
                    Patterns.fill(region, round | 1L);
                    NixlFileCopier copier = new NixlFileCopier(
                            "kvstore-copier-twice-" + round, "POSIX", Nixl.DRAM_SEG, region, 0, Duration.ofSeconds(60));
                    NixlFileCopier.File file = copier.register(fd, bytes);
                    CountDownLatch moving = new CountDownLatch(1);
                    AtomicInteger moved = new AtomicInteger();
                    Thread mover = Thread.ofPlatform().start(() -> {
                        moving.countDown();
                        try {
                            copier.write(file, List.of(new TransferSpan(0, 0, bytes)));
                            moved.set(1);
                        } catch (IllegalStateException refused) {
                            moved.set(-1); // the first close came first: this round shows nothing
                        }
                    });
                    moving.await();
                    LockSupport.parkNanos(2_000_000);
                    Thread first = Thread.ofPlatform().start(copier::close);
                    while (isOpen(copier, fd, bytes)) {
                        Thread.onSpinWait();
                    }
                    copier.close(); // the second close
                    byte[] end = readTail(path, bytes, tail);
                    mover.join();
                    first.join();
                    if (moved.get() == 1) {
                        conclusive++;
                        assertThat(MemorySegment.ofArray(end).mismatch(region.asSlice(bytes - tail)))
                                .as(
                                        "round %d: the file's last MiB when the second close returned (-1: the write"
                                                + " had ended)",
                                        round)
                                .isEqualTo(-1L);
                    }
                }
            }
        } finally {
            LibC.close(fd);
        }
        assertThat(conclusive)
                .as("rounds whose write was under way when the copier closed")
                .isPositive();
    }

    /** Whether the copier still takes a registration (of a file it has already: nothing is registered). */
    private static boolean isOpen(NixlFileCopier copier, int fd, long bytes) {
        try {
            copier.register(fd, bytes);
            return true;
        } catch (IllegalStateException closed) {
            return false;
        }
    }

    /** One thread's moves: reads of its file area into its destination and writes of its source, until refused. */
    private record Mover(
            NixlFileCopier copier, NixlFileCopier.File file, MemorySegment region, Path path, int index, long seed) {

        void run(
                CountDownLatch ready,
                AtomicInteger completed,
                AtomicInteger refused,
                ConcurrentLinkedQueue<String> unexpected) {
            Random r = new Random(seed);
            long base = index * 2 * MOVE;
            MemorySegment source = region.asSlice(base, MOVE);
            MemorySegment destination = region.asSlice(base + MOVE, MOVE);
            Patterns.fill(source, seed | 1);
            // the mover's read area of the file holds the file's pattern at offset base
            byte[] expected;
            try {
                expected = readFile(path, base + MOVE);
            } catch (Exception e) {
                unexpected.add("mover " + index + " could not read the file: " + e);
                return;
            } finally {
                ready.countDown();
            }
            while (true) {
                boolean read = r.nextBoolean();
                List<TransferSpan> spans = new ArrayList<>();
                for (int s = 0; s < SPANS; s++) {
                    int reversed = SPANS - 1 - s; // memory span s to file span SPANS-1-s: nothing coalesces
                    spans.add(
                            read
                                    ? new TransferSpan(base + MOVE + s * SPAN, base + reversed * SPAN, SPAN)
                                    : new TransferSpan(base + s * SPAN, base + MOVE + reversed * SPAN, SPAN));
                }
                if (read) {
                    Patterns.fill(destination, r.nextLong() | 1);
                }
                try {
                    long moved = read ? copier.read(file, spans) : copier.write(file, spans);
                    completed.incrementAndGet();
                    if (moved != MOVE) {
                        unexpected.add("mover " + index + " moved " + moved + " of " + MOVE + " bytes");
                        return;
                    }
                    if (read && !readMatches(destination, expected, base)) {
                        unexpected.add("mover " + index + ": a completed read left other bytes than the file's");
                        return;
                    }
                } catch (IllegalStateException e) {
                    refused.incrementAndGet();
                    if (!String.valueOf(e.getMessage()).contains("closed") || e.getSuppressed().length > 0) {
                        unexpected.add("mover " + index + " refused otherwise than as closed: " + describe(e));
                    }
                    byte[] after = destination.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                    LockSupport.parkNanos(QUIET_NANOS);
                    if (destination.mismatch(MemorySegment.ofArray(after)) != -1) {
                        unexpected.add(
                                "mover " + index + ": memory changed after its move was refused (" + describe(e) + ")");
                    }
                    return;
                } catch (RuntimeException e) {
                    unexpected.add("mover " + index + " failed: " + describe(e));
                    return;
                }
            }
        }

        /** Whether memory span s holds the file's span SPANS-1-s of this mover's read area. */
        private static boolean readMatches(MemorySegment destination, byte[] file, long base) {
            for (int s = 0; s < SPANS; s++) {
                int reversed = SPANS - 1 - s;
                MemorySegment want = MemorySegment.ofArray(file).asSlice(base + reversed * SPAN, SPAN);
                if (destination.asSlice(s * SPAN, SPAN).mismatch(want) != -1) {
                    return false;
                }
            }
            return true;
        }
    }

    private static String describe(Throwable e) {
        StringBuilder b = new StringBuilder(e.toString());
        for (Throwable s : e.getSuppressed()) {
            b.append(" [suppressed: ").append(s).append(']');
        }
        for (Throwable c = e.getCause(); c != null; c = c.getCause()) {
            b.append(" [cause: ").append(c).append(']');
        }
        return b.toString();
    }

    private static byte[] readTail(Path path, long length, long tail) throws Exception {
        try (FileChannel ch = FileChannel.open(path)) {
            ByteBuffer b = ByteBuffer.allocate((int) tail);
            while (b.hasRemaining() && ch.read(b, length - tail + b.position()) > 0) {
                // read until full
            }
            return b.array();
        }
    }

    private static byte[] readFile(Path path, long length) throws Exception {
        try (FileChannel ch = FileChannel.open(path)) {
            ByteBuffer b = ByteBuffer.allocate((int) length);
            while (b.hasRemaining() && ch.read(b, b.position()) > 0) {
                // read until full
            }
            return b.array();
        }
    }
}
