package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.TierEngine;
import io.kvstore.tier.nvme.NvmeTier;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

/**
 * A fetch never ends short: with one byte flipped on disk in the 4th of 8 blocks, the answer is still
 * complete and parseable, the bad block a missing frame ({@code length = 0xFFFFFFFF}, no bytes), every
 * other block byte-exact.
 */
class FetchIntegrityTest extends ServiceTest {

    @Autowired
    TierEngine engine;

    @Test
    void aBlockCorruptOnDiskBecomesAMissingFrameAndTheAnswerStaysComplete() throws Exception {
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(8, 404));
        List<byte[]> blocks = TestLayout.blocks(8, 404);
        storeOnNvmeOnly("flip", hashes, blocks);
        NvmeTier nvme = (NvmeTier) engine.tier(TierId.NVME);
        BlockKey bad = new BlockKey("flip", hashes.get(3));
        try (FileChannel ch = FileChannel.open(nvme.fileOf(bad), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            long at = nvme.offsetOf(bad) % nvme.fileSize() + 1000;
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, at);
            one.put(0, (byte) (one.get(0) ^ 0x5A)).rewind();
            ch.write(one, at);
            ch.force(true);
        }
        assertThat(http.json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"flip\",\"blockHashes\":" + Http.hexList(hashes) + "}")
                        .body())
                .contains("\"matchedBlocks\":8");

        var r = http.fetch("flip", "{\"blockHashes\":" + Http.hexList(hashes) + "}");
        assertThat(r.statusCode()).isEqualTo(200);
        var in = new DataInputStream(new ByteArrayInputStream(r.body()));
        for (int i = 0; i < 8; i++) {
            int hashLen = in.readUnsignedByte();
            assertThat(in.readNBytes(hashLen)).isEqualTo(hashes.get(i).toBytes());
            int parentLen = in.readUnsignedByte();
            in.readNBytes(parentLen);
            int length = in.readInt();
            if (i == 3) {
                assertThat(length).as("block 3 is a missing frame").isEqualTo(0xFFFF_FFFF);
                continue;
            }
            assertThat(length).isEqualTo(TestLayout.BLOCK_BYTES);
            assertThat(Arrays.equals(in.readNBytes(length), blocks.get(i)))
                    .as("block " + i)
                    .isTrue();
        }
        assertThat(in.available()).as("nothing after the last frame").isZero();
        assertThat(http.get("/actuator/prometheus").body()).containsPattern("kvstore_fetch_missing_blocks_total [1-9]");
        // the corrupt copy is gone: a lookup now stops before it
        assertThat(http.json(
                                "POST",
                                "/v1/lookup",
                                "{\"namespace\":\"flip\",\"blockHashes\":" + Http.hexList(hashes) + "}")
                        .body())
                .contains("\"matchedBlocks\":3");
    }

    /**
     * A block file cut short under the running service (as a failing drive fails reads with EIO): a fetch of
     * blocks past the cut answers 200 with those blocks as missing frames, not a 500 or a stream cut off
     * mid-way, and the unreadable copies are dropped and counted, so lookups stop offering them.
     */
    @Test
    void aBlockTheDiskCannotReadBecomesAMissingFrameAndIsDropped() throws Exception {
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(8, 505));
        List<byte[]> blocks = TestLayout.blocks(8, 505);
        storeOnNvmeOnly("cut", hashes, blocks);
        NvmeTier nvme = (NvmeTier) engine.tier(TierId.NVME);
        BlockKey third = new BlockKey("cut", hashes.get(3));
        java.nio.file.Path file = nvme.fileOf(third);
        long cut = nvme.offsetOf(third) % nvme.fileSize();
        // the blocks of this prompt whose slots lie in the same file at or past the cut lose their bytes
        boolean[] lost = new boolean[8];
        for (int i = 0; i < 8; i++) {
            BlockKey k = new BlockKey("cut", hashes.get(i));
            lost[i] = file.equals(nvme.fileOf(k)) && nvme.offsetOf(k) % nvme.fileSize() >= cut;
        }
        long failuresBefore = nvme.readFailures();
        ByteBuffer tail;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            tail = ByteBuffer.allocate((int) (ch.size() - cut));
            ch.read(tail, cut);
            ch.truncate(cut);
        }
        try {
            var r = http.fetch("cut", "{\"blockHashes\":" + Http.hexList(hashes) + "}");
            assertThat(r.statusCode()).isEqualTo(200);
            var in = new DataInputStream(new ByteArrayInputStream(r.body()));
            int firstLost = 8;
            for (int i = 0; i < 8; i++) {
                in.readNBytes(in.readUnsignedByte());
                in.readNBytes(in.readUnsignedByte());
                int length = in.readInt();
                if (lost[i]) {
                    assertThat(length).as("block " + i + " lay past the cut").isEqualTo(0xFFFF_FFFF);
                    firstLost = Math.min(firstLost, i);
                    continue;
                }
                assertThat(length).isEqualTo(TestLayout.BLOCK_BYTES);
                assertThat(Arrays.equals(in.readNBytes(length), blocks.get(i)))
                        .as("block " + i)
                        .isTrue();
            }
            assertThat(in.available()).as("nothing after the last frame").isZero();
            assertThat(nvme.readFailures() - failuresBefore).isPositive();
            assertThat(http.get("/actuator/prometheus").body())
                    .containsPattern("kvstore_read_failures_total\\{tier=\"NVME\"\\} [1-9]");
            assertThat(http.json(
                                    "POST",
                                    "/v1/lookup",
                                    "{\"namespace\":\"cut\",\"blockHashes\":" + Http.hexList(hashes) + "}")
                            .body())
                    .as("the dropped copies are no longer offered")
                    .contains("\"matchedBlocks\":" + firstLost);
            var gone = http.fetch("cut", "{\"blockHashes\":[\"" + hashes.get(3).hex() + "\"]}");
            assertThat(gone.statusCode()).as("dropped: no longer stored").isEqualTo(404);
            assertThat(new String(gone.body()))
                    .contains("\"status\":404")
                    .contains(hashes.get(3).hex());
        } finally {
            // other tests' blocks may share this file: give the cut bytes back
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                tail.flip();
                ch.write(tail, cut);
                ch.force(true);
            }
        }
    }

    /** Declares {@code ns}, stores the blocks and evicts them from DRAM, so NVMe holds their only copy. */
    private void storeOnNvmeOnly(String ns, List<BlockHash> hashes, List<byte[]> blocks) throws Exception {
        assertThat(http.json("PUT", "/v1/namespaces/" + ns, TestLayout.declaration("m"))
                        .statusCode())
                .isIn(200, 201);
        assertThat(http.putBytes(
                                "/v1/namespaces/" + ns + "/blocks",
                                "application/octet-stream",
                                Http.frames(hashes, blocks, null))
                        .statusCode())
                .isEqualTo(200);
        assertThat(http.json("POST", "/admin/evict", "{\"tier\":\"DRAM\",\"namespace\":\"" + ns + "\"}", ADMIN)
                        .body())
                .contains("\"evictedBlocks\":" + hashes.size());
    }
}
