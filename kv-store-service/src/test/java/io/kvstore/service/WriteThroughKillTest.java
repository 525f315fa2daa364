package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The write-through guarantee of README, tried on a real service process: blocks stored into a
 * {@code "durability":"write-through"} namespace are acknowledged only once they are on the NVMe tier, so a
 * SIGKILL in the middle of a stream of stores loses none of the acknowledged ones; after a restart every one
 * of them fetches byte-exact.
 */
class WriteThroughKillTest {

    private static final int BATCH = 4;
    private static final int TOTAL = 400;

    private static Process start(Path dir, int port) throws Exception {
        return new ProcessBuilder(ServiceProcesses.command(List.of(
                        "--server.port=" + port,
                        "--kvstore.data-dir=" + dir.resolve("data"),
                        "--kvstore.tiers.dram.capacity=2MB",
                        "--kvstore.tiers.dram.slab-size=256KB",
                        "--kvstore.tiers.nvme.capacity=64MB",
                        "--kvstore.tiers.nvme.file-size=8MB",
                        "--kvstore.tiers.nvme.slab-size=256KB")))
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(
                        dir.resolve("service.log").toFile()))
                .start();
    }

    private static Http awaitUp(Process p, int port) throws Exception {
        Http http = new Http(port);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
        while (true) {
            assertThat(p.isAlive()).as("the service process is running").isTrue();
            try {
                if (http.get("/v1/namespaces").statusCode() == 200) {
                    return http;
                }
            } catch (java.io.IOException notYet) {
                // not listening yet
            }
            assertThat(System.nanoTime()).as("service up within 180 s").isLessThan(deadline);
            Thread.sleep(250);
        }
    }

    @Test
    void everyAcknowledgedWriteThroughBlockSurvivesSigkill() throws Exception {
        Path dir = TempDirs.create("kvstore-write-through-kill");
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(TOTAL, 5));
        List<byte[]> blocks = TestLayout.blocks(TOTAL, 5);
        int port = ServiceProcesses.freePort();
        Process service = start(dir, port);
        AtomicInteger acknowledged = new AtomicInteger();
        try {
            Http http = awaitUp(service, port);
            String declaration = TestLayout.declaration("m")
                    .replace("\"hashSeed\":\"0\"", "\"hashSeed\":\"0\",\"durability\":\"write-through\"");
            var declared = http.json("PUT", "/v1/namespaces/durable", declaration);
            assertThat(declared.statusCode()).as(declared.body()).isEqualTo(201);

            Thread storing = Thread.ofPlatform().start(() -> {
                for (int from = 0; from < TOTAL; from += BATCH) {
                    try {
                        var r = http.putBytes(
                                "/v1/namespaces/durable/blocks",
                                "application/octet-stream",
                                Http.frames(
                                        hashes.subList(from, from + BATCH),
                                        blocks.subList(from, from + BATCH),
                                        from == 0 ? null : hashes.get(from - 1)));
                        if (r.statusCode() != 200) {
                            return;
                        }
                        acknowledged.set(from + BATCH);
                    } catch (Exception killed) {
                        return; // the connection died with the process: this batch was never acknowledged
                    }
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (acknowledged.get() < TOTAL / 3) {
                assertThat(System.nanoTime())
                        .as("a third of the blocks stored within 120 s")
                        .isLessThan(deadline);
                Thread.sleep(5);
            }
            service.destroyForcibly().waitFor(); // SIGKILL while stores are in flight
            storing.join();
        } finally {
            service.destroyForcibly().waitFor();
        }
        int acked = acknowledged.get();
        assertThat(acked).isGreaterThanOrEqualTo(TOTAL / 3);

        int port2 = ServiceProcesses.freePort();
        Process restarted = start(dir, port2);
        try {
            Http http = awaitUp(restarted, port2);
            var fetched = http.fetch("durable", "{\"blockHashes\":" + Http.hexList(hashes.subList(0, acked)) + "}");
            assertThat(fetched.statusCode()).isEqualTo(200);
            var in = new DataInputStream(new ByteArrayInputStream(fetched.body()));
            List<Integer> wrong = new ArrayList<>();
            for (int i = 0; i < acked; i++) {
                byte[] hash = in.readNBytes(in.readUnsignedByte());
                assertThat(hash)
                        .as("frame %d names block %d", i, i)
                        .isEqualTo(hashes.get(i).toBytes());
                in.readNBytes(in.readUnsignedByte()); // parent
                int length = in.readInt();
                assertThat(length)
                        .as("block %d of %d acknowledged came back after SIGKILL", i, acked)
                        .isPositive();
                if (!java.util.Arrays.equals(in.readNBytes(length), blocks.get(i))) {
                    wrong.add(i);
                }
            }
            assertThat(wrong).as("blocks whose bytes differ").isEmpty();
            assertThat(in.available()).isZero();
        } finally {
            restarted.destroyForcibly().waitFor();
        }
    }
}
