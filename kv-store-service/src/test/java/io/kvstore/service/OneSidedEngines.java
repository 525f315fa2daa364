package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * Runs {@link OneSidedEngineProcess} against a test server and checks what a user would: the engine's
 * verdict, the bytes HTTP then serves, and a killed engine's lease expiring. Shared by the direct-UCX
 * and the NIXL one-sided tests.
 */
final class OneSidedEngines {

    private OneSidedEngines() {}

    static Process start(int port, String ns, int blocks, int seed, String tls, String mode) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        return new ProcessBuilder(
                        java,
                        "-Xmx128m",
                        "--enable-native-access=ALL-UNNAMED",
                        "-cp",
                        System.getProperty("java.class.path"),
                        OneSidedEngineProcess.class.getName(),
                        "http://127.0.0.1:" + port,
                        ns,
                        Integer.toString(blocks),
                        Integer.toString(seed),
                        tls,
                        mode)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
    }

    /**
     * The engine process's verdict: its lines starting {@code OK}, {@code FAIL} or {@code LEASE}, once it has
     * exited. Its stdout is read while it runs, as it logs there too: unread, a full pipe (64 KiB) would block
     * the process and this wait with it.
     */
    static String verdict(Process p) throws Exception {
        FutureTask<String> lines = new FutureTask<>(() -> {
            try (var out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                return out.lines()
                        .filter(l -> l.startsWith("OK ") || l.startsWith("FAIL ") || l.startsWith("LEASE "))
                        .collect(Collectors.joining("\n"));
            }
        });
        Thread.ofPlatform().daemon().name("engine-process-stdout").start(lines);
        try {
            assertThat(p.waitFor(120, TimeUnit.SECONDS))
                    .as("engine process finished")
                    .isTrue();
            return lines.get(30, TimeUnit.SECONDS);
        } finally {
            p.destroyForcibly();
        }
    }

    /**
     * Declares {@code ns}, has an engine process reserve, WRITE, commit, lease and READ back {@code
     * blocks} blocks over the path it expects, then checks HTTP serves exactly the bytes it wrote.
     */
    static void roundTrip(Http http, int port, String ns, int blocks, int seed, String tls, String expectedPath)
            throws Exception {
        assertThat(http.json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("one-sided"))
                        .statusCode())
                .isIn(200, 201);
        Process p = start(port, ns, blocks, seed, tls, "roundtrip");
        String out = verdict(p);
        System.out.println("engine process (" + (tls.isEmpty() ? "UCX default transports" : tls) + "): " + out);
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out).startsWith("OK " + blocks + " blocks").contains("path " + expectedPath);

        // what the engine wrote in place is what HTTP serves
        int[] tokens = TestLayout.tokens(blocks, seed);
        List<BlockHash> hashes = TestLayout.hashes(tokens);
        var fetched = http.fetch(ns, "{\"blockHashes\":" + Http.hexList(hashes) + "}");
        assertThat(fetched.statusCode()).isEqualTo(200);
        var frames = java.nio.ByteBuffer.wrap(fetched.body());
        List<byte[]> expected = TestLayout.blocks(blocks, seed);
        for (int i = 0; i < blocks; i++) {
            frames.position(frames.position() + 1 + hashes.get(i).length());
            int parentLength = frames.get() & 0xff;
            frames.position(frames.position() + parentLength);
            byte[] data = new byte[frames.getInt()];
            frames.get(data);
            assertThat(data).as("block %d", i).isEqualTo(expected.get(i));
        }
    }

    /**
     * An engine process takes a lease on {@code ns}'s {@code blocks} blocks and is killed: the lease holds
     * the blocks (the namespace cannot be deleted) until it expires, then they are freed.
     */
    static void leaseDieAndExpire(Http http, int port, String ns, int blocks, int seed) throws Exception {
        Process p = start(port, ns, blocks, seed, "", "lease-and-die");
        String line;
        try (var out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            do {
                line = out.readLine();
            } while (line != null && !line.startsWith("LEASE ") && !line.startsWith("FAIL "));
            assertThat(line).startsWith("LEASE ").endsWith(" " + blocks);
            String leaseId = line.split(" ")[1];
            assertThat(http.get("/v1/leases/" + leaseId).statusCode()).isEqualTo(200);
            // held: the namespace's blocks cannot be deleted
            assertThat(http.send("DELETE", "/v1/namespaces/" + ns, null, null).statusCode())
                    .isEqualTo(409);
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); // 10 s leases (ServiceTest)
            while (http.get("/v1/leases/" + leaseId).statusCode() == 200 && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertThat(http.get("/v1/leases/" + leaseId).statusCode()).isEqualTo(404);
            var deleted = http.send("DELETE", "/v1/namespaces/" + ns, null, null);
            assertThat(deleted.statusCode()).isEqualTo(200);
            assertThat(deleted.body()).contains("\"deletedBlocks\":" + blocks);
        } finally {
            p.destroyForcibly();
        }
    }
}
