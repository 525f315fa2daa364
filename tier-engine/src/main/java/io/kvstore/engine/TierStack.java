package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.eviction.TierPolicy;
import io.kvstore.tier.BlockTier;
import io.kvstore.tier.device.DeviceTier;
import io.kvstore.tier.memory.MemoryTier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToIntFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The configured tiers, fastest first, each with its settings and its eviction policy. Which tier is
 * above or below which is decided here once; settings change at run time without a lock on the data
 * path (a policy switch is the policy's own business).
 */
final class TierStack implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(TierStack.class);

    private final TreeMap<TierId, BlockTier> tiers = new TreeMap<>();
    private final EnumMap<TierId, TierPolicy> policies = new EnumMap<>(TierId.class);
    private final Map<TierId, TierSettings> settings = new ConcurrentHashMap<>();
    private volatile @Nullable DeviceStoragePath deviceStorage;

    /**
     * @param tierSettings settings per tier; tiers without an entry use {@link TierSettings#DEFAULT}
     * @param parentOf the parent of a resident block, for prefix-aware policies
     * @param bytesOf a resident block's length, for policies that weigh blocks
     * @param held whether a block is pinned or leased now, so policies set it aside until its hold ends
     */
    TierStack(
            Collection<? extends BlockTier> tierList,
            Map<TierId, TierSettings> tierSettings,
            Function<BlockKey, @Nullable BlockKey> parentOf,
            ToIntFunction<BlockKey> bytesOf,
            Predicate<BlockKey> held) {
        if (tierList.isEmpty()) {
            throw new IllegalArgumentException("at least one tier is required");
        }
        for (BlockTier tier : tierList) {
            if (tiers.put(tier.id(), tier) != null) {
                throw new IllegalArgumentException("tier " + tier.id() + " configured twice");
            }
        }
        for (TierId id : tiers.keySet()) {
            TierSettings s = tierSettings.getOrDefault(id, TierSettings.DEFAULT);
            settings.put(id, s);
            policies.put(id, new TierPolicy(s.policy(), tiers.get(id).capacityBytes(), parentOf, bytesOf, held));
        }
    }

    /** @throws IllegalArgumentException when {@code id} is not configured */
    BlockTier get(TierId id) {
        BlockTier tier = tiers.get(id);
        if (tier == null) {
            throw new IllegalArgumentException("tier " + id + " is not configured; configured: " + tiers.keySet());
        }
        return tier;
    }

    /** The tier as a memory tier, for in-place writes. */
    MemoryTier memory(TierId id) {
        if (!(get(id) instanceof MemoryTier memory)) {
            throw new IllegalArgumentException("tier " + id + " is not a memory tier; in-place writes need one");
        }
        return memory;
    }

    TierId fastest() {
        return tiers.firstKey();
    }

    /** The durable end of the stack: where write-through copies go. */
    TierId slowest() {
        return tiers.lastKey();
    }

    /** The next slower tier: where a read looks after a failed copy, and where blocks demote by default. */
    @Nullable
    TierId below(TierId id) {
        return tiers.higherKey(id);
    }

    @Nullable
    TierId above(TierId id) {
        return tiers.lowerKey(id);
    }

    /**
     * Routes HBM and NVMe to each other through {@code path} (GPUDirect Storage): HBM then demotes straight
     * to NVMe and NVMe hits promote straight to HBM, past DRAM. Set once, before the engine moves anything.
     */
    void routeDeviceStorage(DeviceStoragePath path) {
        this.deviceStorage = path;
        log.info("tiers: HBM demotes straight to NVMe and NVMe promotes straight to HBM, via {}", path.describe());
    }

    /** Where blocks leaving {@code id} go: the tier below, or NVMe for HBM on a device storage path. */
    @Nullable
    TierId demotesTo(TierId id) {
        return deviceStorage != null && id == TierId.HBM ? TierId.NVME : below(id);
    }

    /** Where a hit in {@code id} promotes to: the tier above, or HBM for NVMe on a device storage path. */
    @Nullable
    TierId promotesTo(TierId id) {
        return deviceStorage != null && id == TierId.NVME ? TierId.HBM : above(id);
    }

    /** The device storage path when it carries a move from {@code from} to {@code to}, else null. */
    @Nullable
    DeviceStoragePath deviceStorage(TierId from, TierId to) {
        DeviceStoragePath path = deviceStorage;
        return path != null && path.carries(from, to) ? path : null;
    }

    /** How HBM meets NVMe, for operators: the device storage path, or null when blocks go through DRAM. */
    @Nullable
    String deviceStorageRoute() {
        DeviceStoragePath path = deviceStorage;
        return path == null ? null : path.describe();
    }

    /** Moves the device storage path sent through host memory because its copier failed. */
    long deviceStorageFallbacks() {
        DeviceStoragePath path = deviceStorage;
        return path == null ? 0 : path.fallbacks();
    }

    TierPolicy policy(TierId id) {
        return configured(policies.get(id), id);
    }

    /**
     * Frees {@code copy} of the key in tier {@code id} (a {@link BlockTier#copyOf} taken when its bit was cleared),
     * the policy forgetting it first: a promotion may put a new copy there the moment the slot is free. Nothing
     * happens when the tier holds another copy of the key by now (written after this one went) or none: that copy
     * and its place in the policy are someone else's, and a tier that dropped this copy itself told its reader,
     * which had the policy forget it then ({@link Residency#dropBad}).
     *
     * @return whether the copy was freed
     */
    boolean freeCopy(TierId id, BlockKey key, long copy) {
        BlockTier tier = get(id);
        if (copy == BlockTier.NO_COPY || tier.copyOf(key) != copy) {
            return false;
        }
        policy(id).onRemove(key);
        return tier.delete(key, copy);
    }

    /** Pins or leases on {@code keys} ended: every tier's policy may evict them again. */
    void holdsEnded(List<BlockKey> keys) {
        for (TierPolicy policy : policies.values()) {
            policy.holdsEnded(keys);
        }
    }

    TierSettings settings(TierId id) {
        return configured(settings.get(id), id);
    }

    /** {@code value}, which exists for every configured tier; a clear error for a tier that is not. */
    private static <T> T configured(@Nullable T value, TierId id) {
        if (value == null) {
            throw new IllegalArgumentException("tier " + id + " is not configured");
        }
        return value;
    }

    Set<TierId> ids() {
        return tiers.keySet();
    }

    Collection<BlockTier> all() {
        return tiers.values();
    }

    /** Whether {@code id} has passed its high watermark (of the bytes it can hold now, see usableBytes). */
    boolean aboveHighWatermark(TierId id) {
        BlockTier tier = get(id);
        return tier.usedBytes() > settings(id).highWatermark() * tier.usableBytes();
    }

    /** Bytes {@code id} holds above its low watermark; zero or less when it is below. */
    long excessOverLowWatermark(TierId id) {
        BlockTier tier = get(id);
        return tier.usedBytes() - (long) (settings(id).lowWatermark() * tier.usableBytes());
    }

    /** Synchronized: two switches at once must leave the settings naming the policy that runs. */
    synchronized void setPolicy(TierId id, EvictionPolicyKind kind) {
        get(id);
        policy(id).switchTo(kind);
        settings.compute(id, (k, s) -> s.withPolicy(kind));
        log.info("tier {}: eviction policy is now {}", id, kind);
    }

    void setWatermarks(TierId id, double high, double low) {
        get(id);
        settings.compute(id, (k, s) -> s.withWatermarks(high, low));
        log.info("tier {}: watermarks now high {} low {}", id, high, low);
    }

    /** Each tier's figures; {@code demotionFailure} names why copies out of a tier fail, or gives null. */
    List<TierStats> stats(Function<TierId, @Nullable String> demotionFailure) {
        List<TierStats> out = new ArrayList<>();
        for (BlockTier t : tiers.values()) {
            String shortage = t.shortage();
            String failing = demotionFailure.apply(t.id());
            String degraded = shortage == null ? failing : failing == null ? shortage : shortage + "; " + failing;
            out.add(new TierStats(
                    t.id(),
                    t.provider(),
                    t instanceof MemoryTier m && m.emulated() || t instanceof DeviceTier d && d.emulated(),
                    t.capacityBytes(),
                    t.usableBytes(),
                    t.usedBytes(),
                    t.blockCount(),
                    t.outOfSpaceErrors(),
                    degraded,
                    settings(t.id())));
        }
        return out;
    }

    @Override
    public void close() {
        DeviceStoragePath path = deviceStorage;
        if (path != null) {
            path.close();
        }
        for (BlockTier tier : tiers.values()) {
            tier.close();
        }
    }
}
