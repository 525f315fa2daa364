package io.kvstore.hashing;

import io.kvstore.catalog.BlockHash;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import net.openhft.hashing.LongHashFunction;

/**
 * Dynamo KVBM's chained xxh3-64 hash: {@code block[i] = xxh3_64(u32-LE tokens of block i, seed = salt)},
 * {@code seq[0] = block[0]}, {@code seq[i] = xxh3_64(u64-LE seq[i-1] || u64-LE block[i], seed 0)}.
 *
 * <p>The salt folds in the request's extra keys: 0 when there are none, otherwise
 * {@code xxh3_64(UTF-8 of "lora=<name>;salt=<salt>;<more...>", seed 0)} with absent parts left empty.
 * Since every block hash is seeded with it and each sequence hash covers its parent, two requests with
 * different extra keys never share a block.
 */
public final class Xxh3Hasher implements BlockHasher {

    private static final LongHashFunction UNSEEDED = LongHashFunction.xx3();
    private static final ValueLayout.OfInt U32_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Override
    public HashScheme scheme() {
        return HashScheme.XXH3;
    }

    /** The seed of every block hash for these extra keys. */
    public static long saltHash(ExtraKeys extra) {
        if (extra == null || extra.isEmpty()) {
            return 0;
        }
        StringBuilder s = new StringBuilder("lora=").append(extra.loraName() == null ? "" : extra.loraName())
                .append(";salt=").append(extra.cacheSalt() == null ? "" : extra.cacheSalt()).append(';');
        List<Object> more = extra.more();
        for (int i = 0; i < more.size(); i++) {
            s.append(i == 0 ? "" : ",").append(more.get(i));
        }
        return UNSEEDED.hashBytes(s.toString().getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public BlockHash hashBlock(BlockHash parent, int[] tokenIds, int from, int to, int blockIndex, ExtraKeys extra) {
        long block = blockHash(tokenIds, from, to, saltHash(extra));
        return BlockHash.ofLong(parent == null ? block : chain(parent.asLong(), block));
    }

    @Override
    public List<BlockHash> hashPrompt(int[] tokenIds, int blockSize, ExtraKeys extra) {
        BlockHasher.checkPrompt(tokenIds, blockSize);
        long salt = saltHash(extra);
        int blocks = tokenIds.length / blockSize;
        BlockHash[] hashes = new BlockHash[blocks];
        long sequence = 0;
        for (int b = 0; b < blocks; b++) {
            long block = blockHash(tokenIds, b * blockSize, (b + 1) * blockSize, salt);
            sequence = b == 0 ? block : chain(sequence, block);
            hashes[b] = BlockHash.ofLong(sequence);
        }
        return List.of(hashes);
    }

    static long blockHash(int[] tokenIds, int from, int to, long seed) {
        byte[] bytes = new byte[4 * (to - from)];
        MemorySegment le = MemorySegment.ofArray(bytes);
        for (int i = from; i < to; i++) {
            le.set(U32_LE, 4L * (i - from), tokenIds[i]);
        }
        return LongHashFunction.xx3(seed).hashBytes(bytes);
    }

    static long chain(long parent, long block) {
        byte[] bytes = new byte[16];
        MemorySegment le = MemorySegment.ofArray(bytes);
        le.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, parent);
        le.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 8, block);
        return UNSEEDED.hashBytes(bytes);
    }
}
