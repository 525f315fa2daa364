package io.kvstore.service.quota;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.QuotaExceededException;
import io.kvstore.service.security.Caller;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Each tenant's bytes per tier, and the quotas on them. The counts follow the engine's copies: every copy
 * added to a tier (stored, committed, demoted or promoted into it, found there on restart) adds its bytes
 * to the tier's count of the tenant owning the namespace, every copy removed (evicted, demoted out,
 * deleted, dropped) subtracts them, so a tenant's bytes move with its blocks. A store is admitted only
 * while the tenant is under its quota in the tier the block lands in (its bytes are charged before the
 * write and the charge returned after it, so concurrent stores cannot pass the quota together) and under
 * its quota in every tier below (where its blocks go next).
 *
 * <p>Hot-path cost: one {@link ConcurrentHashMap} read to find the namespace's account and one CAS on the
 * tenant's own counter; no lock is shared between tenants, or between tiers of one tenant. Demotions and
 * promotions are never refused: a tenant's bytes in a lower tier may pass its quota there by what its
 * upper tiers still held, and then only its new stores are refused.
 *
 * <p>Metrics: {@code kvstore_tenant_bytes{tenant,tier}}, {@code kvstore_tenant_quota_bytes{tenant,tier}}
 * (tiers with a quota) and {@code kvstore_tenant_quota_refusals_total{tenant,tier}}.
 */
public final class TenantUsage implements EngineEvents {

    private static final TierId[] TIERS = TierId.values();

    /** Where reservations hold their slots (the one-sided and local paths reserve DRAM). */
    private static final TierId RESERVED = TierId.DRAM;

    private final Function<String, @Nullable String> ownerOf;
    private final KvStoreProperties properties;
    private final MeterRegistry registry;
    private final long[] capacity = new long[TIERS.length];
    private final ConcurrentHashMap<String, Account> tenants = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Account> namespaces = new ConcurrentHashMap<>();

    /**
     * @param ownerOf the tenant owning a namespace, or null when unknown (then {@link Caller#LOCAL_TENANT})
     */
    public TenantUsage(
            KvStoreProperties properties, Function<String, @Nullable String> ownerOf, MeterRegistry registry) {
        this.properties = properties;
        this.registry = registry;
        this.ownerOf = ownerOf;
        var t = properties.tiers();
        if (t.hbm() != null) {
            capacity[TierId.HBM.ordinal()] = t.hbm().capacity().toBytes();
        }
        capacity[TierId.DRAM.ordinal()] = t.dram().capacity().toBytes();
        if (t.nvme().enabled()) {
            capacity[TierId.NVME.ordinal()] = t.nvme().capacity().toBytes();
        }
    }

    /** One tenant: bytes per tier (resident plus charged by stores in progress) and its limits. */
    private static final class Account {
        final String tenant;
        final AtomicLongArray bytes = new AtomicLongArray(TIERS.length);
        final long[] limit = new long[TIERS.length];
        final String[] source = new String[TIERS.length];
        final Counter[] refusals = new Counter[TIERS.length];

        Account(String tenant) {
            this.tenant = tenant;
        }
    }

    // ---- accounting ---------------------------------------------------------------------------

    @Override
    public void copyAdded(TierId tier, BlockRecord block) {
        account(block.key().namespace()).bytes.addAndGet(tier.ordinal(), block.length());
    }

    @Override
    public void copyRemoved(TierId tier, BlockKey key, int length) {
        account(key.namespace()).bytes.addAndGet(tier.ordinal(), -length);
    }

    /** Forgets which tenant a deleted namespace belonged to, so a later declaration may give it another. */
    public void forget(String namespace) {
        namespaces.remove(namespace);
    }

    private Account account(String namespace) {
        Account a = namespaces.get(namespace);
        if (a != null) {
            return a;
        }
        String owner = ownerOf.apply(namespace);
        if (owner == null) {
            // not declared (or declared before tenants): not remembered, so a later declaration's owner counts
            return tenant(Caller.LOCAL_TENANT);
        }
        return namespaces.computeIfAbsent(namespace, ns -> tenant(owner));
    }

    private Account tenant(String tenant) {
        return tenants.computeIfAbsent(tenant, this::open);
    }

    private Account open(String tenant) {
        Account a = new Account(tenant);
        KvStoreProperties.TenantQuota q = properties.tenants().get(tenant);
        double share = properties.limits().tierFractionPerTenant();
        for (TierId tier : TIERS) {
            var configured = q == null
                    ? null
                    : switch (tier) {
                        case HBM -> q.hbm();
                        case DRAM -> q.dram();
                        case NVME -> q.nvme();
                    };
            int i = tier.ordinal();
            if (configured != null) {
                a.limit[i] = configured.toBytes();
                a.source[i] = "kvstore.tenants." + tenant + "." + tier.name().toLowerCase(java.util.Locale.ROOT);
            } else if (share < 1) {
                a.limit[i] = (long) (capacity[i] * share);
                a.source[i] = "kvstore.limits.tier-fraction-per-tenant of " + Sizes.human(capacity[i]);
            } else {
                a.limit[i] = Long.MAX_VALUE;
            }
            if (capacity[i] > 0) {
                Gauge.builder("kvstore.tenant.bytes", a.bytes, b -> b.get(i))
                        .description("bytes of the tenant's blocks in the tier (and charged to stores in progress)")
                        .baseUnit("bytes")
                        .tags("tenant", tenant, "tier", tier.name())
                        .register(registry);
                if (a.limit[i] != Long.MAX_VALUE) {
                    Gauge.builder("kvstore.tenant.quota", a.limit, l -> l[i])
                            .description("the tenant's quota in the tier")
                            .baseUnit("bytes")
                            .tags("tenant", tenant, "tier", tier.name())
                            .register(registry);
                }
                a.refusals[i] = Counter.builder("kvstore.tenant.quota.refusals")
                        .description("stores and reservations refused because the tenant was at its quota in the tier")
                        .tags("tenant", tenant, "tier", tier.name())
                        .register(registry);
            }
        }
        return a;
    }

    // ---- admission ----------------------------------------------------------------------------

    /** Bytes charged to a store in progress; closing returns them (the copy, if made, now counts instead). */
    public interface Charge extends AutoCloseable {
        /** Nothing charged: an unlimited tier, or a block already held. */
        Charge NONE = () -> {};

        @Override
        void close();
    }

    /**
     * Admits {@code bytes} of the namespace's tenant into {@code tier}, charging them until the returned
     * charge is closed.
     *
     * @throws QuotaExceededException when the tenant is at its quota in {@code tier} or a tier below
     */
    public Charge charge(String namespace, TierId tier, long bytes) {
        return charge(namespace, tier, bytes, null);
    }

    /**
     * As {@link #charge(String, TierId, long)}, counting the tenant's open reservations of {@code reservations}
     * (DRAM slots that its commits will fill) as held in DRAM, whether the store lands there or above it,
     * checked under the ledger's lock of the tenant.
     */
    public Charge charge(String namespace, TierId tier, long bytes, @Nullable ReservationLedger reservations) {
        Account a = account(namespace);
        if (reservations == null || a.limit[RESERVED.ordinal()] == Long.MAX_VALUE) {
            return charge(a, tier, bytes, 0);
        }
        return reservations.withReserved(a.tenant, reserved -> charge(a, tier, bytes, reserved));
    }

    private Charge charge(Account a, TierId tier, long bytes, long reserved) {
        requireBelow(a, tier, reserved);
        int i = tier.ordinal();
        long limit = a.limit[i];
        if (limit == Long.MAX_VALUE) {
            return Charge.NONE;
        }
        long pending = tier == RESERVED ? reserved : 0;
        while (true) {
            long held = a.bytes.get(i);
            if (held + pending + bytes > limit) {
                throw refusal(a, tier, held + pending, bytes);
            }
            if (a.bytes.compareAndSet(i, held, held + bytes)) {
                return () -> a.bytes.addAndGet(i, -bytes);
            }
        }
    }

    /**
     * Refuses {@code bytes} more of the namespace's tenant in {@code tier} (with {@code pending} already
     * promised to it, e.g. open reservations) when they would pass a quota; charges nothing.
     */
    public void require(String namespace, TierId tier, long bytes, long pending) {
        Account a = account(namespace);
        requireBelow(a, tier, 0);
        long held = a.bytes.get(tier.ordinal()) + pending;
        if (a.limit[tier.ordinal()] != Long.MAX_VALUE && held + bytes > a.limit[tier.ordinal()]) {
            throw refusal(a, tier, held, bytes);
        }
    }

    /** Refuses when the tenant is at its quota in a tier below {@code tier}, {@code reserved} held in DRAM. */
    private void requireBelow(Account a, TierId tier, long reserved) {
        for (TierId below = tier.below(); below != null; below = below.below()) {
            int i = below.ordinal();
            long held = a.bytes.get(i) + (below == RESERVED ? reserved : 0);
            if (capacity[i] > 0 && a.limit[i] != Long.MAX_VALUE && held >= a.limit[i]) {
                throw refusal(a, below, held, 0);
            }
        }
    }

    private static QuotaExceededException refusal(Account a, TierId tier, long held, long asked) {
        Counter refused = a.refusals[tier.ordinal()];
        if (refused != null) {
            refused.increment();
        }
        return new QuotaExceededException("tenant " + a.tenant + ": " + tier + " quota "
                + Sizes.human(a.limit[tier.ordinal()]) + " reached (" + held + " bytes held there"
                + (asked > 0 ? ", " + asked + " more asked" : "") + "; " + a.source[tier.ordinal()]
                + "): delete blocks or namespaces, or wait for eviction to move them out");
    }

    // ---- views --------------------------------------------------------------------------------

    /** One tier of a tenant: bytes held (and charged to stores in progress) and the quota (null: none). */
    public record TierUse(long bytes, @Nullable Long quota) {}

    /** A tenant's use of every configured tier. */
    public record View(String tenant, Map<TierId, TierUse> tiers) {}

    /** Every tenant that has held blocks since start-up, or has a quota configured. */
    public List<View> views() {
        properties.tenants().keySet().forEach(this::tenant);
        List<View> out = new ArrayList<>();
        for (Account a : tenants.values()) {
            Map<TierId, TierUse> tiers = new EnumMap<>(TierId.class);
            for (TierId tier : TIERS) {
                int i = tier.ordinal();
                if (capacity[i] > 0) {
                    tiers.put(tier, new TierUse(a.bytes.get(i), a.limit[i] == Long.MAX_VALUE ? null : a.limit[i]));
                }
            }
            out.add(new View(a.tenant, tiers));
        }
        out.sort(java.util.Comparator.comparing(View::tenant));
        return out;
    }

    /** Bytes of {@code tenant} in {@code tier} now (resident plus charged). */
    public long bytes(String tenant, TierId tier) {
        Account a = tenants.get(tenant);
        return a == null ? 0 : a.bytes.get(tier.ordinal());
    }
}
