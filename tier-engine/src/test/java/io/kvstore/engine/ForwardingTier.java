package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.tier.BlockTier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Collection;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A tier that hands every call to another, for tests that hold up or watch one of them: a subclass overrides that
 * call and leaves the rest to the real tier, so the engine sees the tier it would see without the test.
 */
abstract class ForwardingTier implements BlockTier {

    /** The real tier every call not overridden goes to. */
    protected final BlockTier tier;

    ForwardingTier(BlockTier tier) {
        this.tier = tier;
    }

    @Override
    public TierId id() {
        return tier.id();
    }

    @Override
    public String provider() {
        return tier.provider();
    }

    @Override
    public long capacityBytes() {
        return tier.capacityBytes();
    }

    @Override
    public long usableBytes() {
        return tier.usableBytes();
    }

    @Override
    public @Nullable String shortage() {
        return tier.shortage();
    }

    @Override
    public long outOfSpaceErrors() {
        return tier.outOfSpaceErrors();
    }

    @Override
    public long usedBytes() {
        return tier.usedBytes();
    }

    @Override
    public int blockCount() {
        return tier.blockCount();
    }

    @Override
    public void write(BlockRecord record, MemorySegment src) throws IOException {
        tier.write(record, src);
    }

    @Override
    public BlockRecord read(BlockKey key, MemorySegment dst) throws IOException {
        return tier.read(key, dst);
    }

    @Override
    public void writeAll(List<BlockRecord> records, List<MemorySegment> sources) throws IOException {
        tier.writeAll(records, sources);
    }

    @Override
    public boolean batchesWrites() {
        return tier.batchesWrites();
    }

    @Override
    public @Nullable MemorySegment verifiedView(BlockKey key) throws IOException {
        return tier.verifiedView(key);
    }

    @Override
    public boolean delete(BlockKey key) {
        return tier.delete(key);
    }

    @Override
    public long copyOf(BlockKey key) {
        return tier.copyOf(key);
    }

    /**
     * Frees the copy through {@link #delete(BlockKey)}, so a subclass that holds up or watches frees sees these
     * too. Checked first, then freed by key: while the tier holds a copy the engine writes no other copy of the key
     * there, so the copy freed is the one checked.
     */
    @Override
    public boolean delete(BlockKey key, long copy) {
        return copy != NO_COPY && tier.copyOf(key) == copy && delete(key);
    }

    @Override
    public void forgetAtRestart(Collection<BlockKey> keys) {
        tier.forgetAtRestart(keys);
    }

    @Override
    public boolean contains(BlockKey key) {
        return tier.contains(key);
    }

    @Override
    public List<BlockRecord> recovered() {
        return tier.recovered();
    }

    @Override
    public void close() {
        tier.close();
    }
}
