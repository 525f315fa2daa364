package io.kvstore.service.config;

import io.kvstore.eviction.EvictionPolicyKind;
import jakarta.validation.Valid;
import jakarta.validation.constraints.AssertTrue;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;
import org.springframework.validation.annotation.Validated;

/**
 * Every {@code kvstore.*} setting, bound with relaxed names ({@code KVSTORE_TIERS_DRAM_CAPACITY} works as
 * an environment variable) and validated at start-up, so a bad value stops the service with the property's
 * name rather than failing a request later. The reference of every property is {@code configs/README.md}.
 *
 * @param dataDir where the NVMe tier's files, its index and the namespace declarations live
 * @param adminToken a bearer token with the admin role only (tenant {@code admin}, no namespaces): kept for
 *     configurations written before admin became a role of {@code kvstore.tokens}; unset is fine
 * @param leaseTimeout how long a lease or an uncommitted reservation holds its blocks
 * @param maxRequestSize the largest request body accepted (a store batch); larger bodies get 413
 * @param tiers the storage tiers; HBM exists only when configured, DRAM always, NVMe unless disabled
 * @param nixl NIXL backend choice (the {@code DYN_KVBM_NIXL_BACKEND_*} environment wins per backend)
 * @param transport the one-sided data plane engines READ and WRITE tier memory through
 * @param local the same-host data path: local engines map the DRAM tier and copy blocks themselves
 * @param tokens engine API bearer tokens, each bound to a tenant; none means protected mode (loopback only)
 * @param limits per-request and per-tenant limits that keep one client from starving the rest
 * @param tenants quotas per tenant name; a tenant not named here gets the shares of {@code limits}
 */
@Validated
@ConfigurationProperties("kvstore")
public record KvStoreProperties(
        @NotNull @DefaultValue("./data") Path dataDir,
        String adminToken,
        @NotNull @DefaultValue("120s") Duration leaseTimeout,
        @NotNull @DefaultValue("1GB") DataSize maxRequestSize,
        @Valid @NotNull @DefaultValue Tiers tiers,
        @Valid @NotNull @DefaultValue Nixl nixl,
        @Valid @NotNull @DefaultValue Transport transport,
        @Valid @NotNull @DefaultValue Local local,
        @NotNull @DefaultValue List<@Valid Token> tokens,
        @Valid @NotNull @DefaultValue Limits limits,
        @NotNull @DefaultValue Map<String, @Valid TenantQuota> tenants) {

    @AssertTrue(message = "kvstore.lease-timeout must be between 1 s and 1 day")
    public boolean isLeaseTimeoutInRange() {
        return leaseTimeout == null
                || (leaseTimeout.compareTo(Duration.ofSeconds(1)) >= 0
                        && leaseTimeout.compareTo(Duration.ofDays(1)) <= 0);
    }

    @AssertTrue(message = "kvstore.max-request-size must be at least 4KB")
    public boolean isMaxRequestSizeValid() {
        return maxRequestSize == null || maxRequestSize.toBytes() >= 4096;
    }

    /**
     * The tiers, fastest first.
     *
     * @param hbm G1: absent unless configured (a GPU, or {@code emulated-device} for demos)
     * @param dram G2: host memory, always present
     * @param nvme G3: files under {@code kvstore.data-dir}/nvme unless paths are given
     */
    public record Tiers(
            @Valid MemoryTier hbm,
            @Valid @NotNull @DefaultValue MemoryTier dram,
            @Valid @NotNull @DefaultValue Nvme nvme) {}

    /**
     * A memory tier (HBM or DRAM).
     *
     * @param provider {@code host}, {@code cuda-pinned}, {@code emulated-device} (labelled as such everywhere)
     * @param capacity bytes allocated up front
     * @param slabSize unit in which memory passes between block sizes; at least the largest block
     * @param policy eviction policy: LRU, LFU, W_TINYLFU or PREFIX_AWARE
     * @param highWatermark fraction of capacity above which blocks move down
     * @param lowWatermark fraction of capacity the move-down stops at
     * @param promoteOnHit whether a hit in a slower tier copies the block up into this one
     */
    public record MemoryTier(
            @NotBlank @DefaultValue("host") String provider,
            @NotNull @DefaultValue("256MB") DataSize capacity,
            @NotNull @DefaultValue("32MB") DataSize slabSize,
            @NotNull @DefaultValue("LRU") EvictionPolicyKind policy,
            @DefaultValue("0.90") double highWatermark,
            @DefaultValue("0.80") double lowWatermark,
            @DefaultValue("false") boolean promoteOnHit) {

        @AssertTrue(message = "watermarks must satisfy 0 < low-watermark < high-watermark <= 1")
        public boolean isWatermarksOrdered() {
            return lowWatermark > 0 && lowWatermark < highWatermark && highWatermark <= 1.0;
        }

        @AssertTrue(message = "provider must be one of host, emulated-device, cuda-pinned, cuda-device")
        public boolean isProviderKnown() {
            // MemoryProvider.NAMES (only the wiring may see the tier classes); KvStorePropertiesTest keeps them equal
            return provider == null || PROVIDERS.contains(provider);
        }

        @AssertTrue(message = "slab-size must be a positive multiple of 4KB, at most the capacity")
        public boolean isSlabSizeValid() {
            return slabSize == null
                    || capacity == null
                    || (slabSize.toBytes() > 0
                            && slabSize.toBytes() % 4096 == 0
                            && slabSize.toBytes() <= capacity.toBytes());
        }
    }

    /**
     * The NVMe tier.
     *
     * @param enabled false runs memory tiers only (nothing survives a restart)
     * @param paths directories for block files, one per device; empty means {@code <data-dir>/nvme}
     * @param capacity bytes of block files, preallocated; a multiple of {@code fileSize}
     * @param fileSize size of each block file, a multiple of {@code slabSize}
     * @param slabSize unit in which space passes between block sizes
     * @param ioThreads I/O requests in flight for batch reads and writes
     * @param policy, highWatermark, lowWatermark as for memory tiers (NVMe drops its victims)
     * @param deviceReadBack on a GPUDirect Storage path from HBM, whether each block written from the device
     *     is read back into host memory and checked before it is indexed (else it keeps the CRC32C checked in
     *     host memory when it entered HBM, and its first read from NVMe checks it)
     */
    public record Nvme(
            @DefaultValue("true") boolean enabled,
            @NotNull @DefaultValue List<Path> paths,
            @NotNull @DefaultValue("1GB") DataSize capacity,
            @NotNull @DefaultValue("256MB") DataSize fileSize,
            @NotNull @DefaultValue("32MB") DataSize slabSize,
            @Min(1) @Max(256) @DefaultValue("4") int ioThreads,
            @NotNull @DefaultValue("LRU") EvictionPolicyKind policy,
            @DefaultValue("0.95") double highWatermark,
            @DefaultValue("0.90") double lowWatermark,
            @DefaultValue("false") boolean deviceReadBack) {

        @AssertTrue(message = "watermarks must satisfy 0 < low-watermark < high-watermark <= 1")
        public boolean isWatermarksOrdered() {
            return lowWatermark > 0 && lowWatermark < highWatermark && highWatermark <= 1.0;
        }
    }

    /**
     * NIXL backend choice.
     *
     * @param backends backend name to {@code true|false} (same values as {@code DYN_KVBM_NIXL_BACKEND_<NAME>})
     * @param requireBackends whether an enabled backend whose library is missing stops start-up
     */
    public record Nixl(
            @NotNull @DefaultValue Map<String, String> backends,
            @DefaultValue("false") boolean requireBackends) {}

    /**
     * The one-sided data plane: the DRAM tier's memory registered with a NIXL agent or a UCX worker so
     * engines READ leased blocks and WRITE reserved slots without the service copying them.
     *
     * @param enabled false serves blocks over HTTP only; reserve answers 503
     * @param ucxTls UCX transports for the direct UCX worker ({@code UCX_TLS}); empty keeps UCX's choice or
     *     the environment's, e.g. {@code sm} on one host, {@code tcp} across hosts, {@code rc,sm} with RDMA.
     *     NIXL's UCX backend reads {@code UCX_TLS} from the environment
     * @param dataPlane {@code auto} (direct libucp when it loads, measured faster on one host; else NIXL),
     *     {@code nixl} or {@code ucx} to force one; a forced plane that cannot start stops start-up
     */
    public record Transport(
            @DefaultValue("true") boolean enabled,
            @NotNull @DefaultValue("") String ucxTls,
            @NotNull @DefaultValue("auto") DataPlane dataPlane) {

        /** {@code kvstore.transport.data-plane}: {@code auto} picks direct libucp when it loads, else NIXL; the others force one. */
        public enum DataPlane {
            AUTO,
            NIXL,
            UCX;

            @Override
            public String toString() {
                return name().toLowerCase(java.util.Locale.ROOT);
            }
        }
    }

    /**
     * The same-host data path: the DRAM tier lives in a file on a memory file system that local engines
     * map, so they copy blocks into reserved slots and out of leased ones themselves (reserve, copy, commit
     * with CRC32C; lease, copy, check, release) and only the control calls go over HTTP. Who may map it is
     * decided by the file's permissions: the service's user only, or also {@code group}. UCX then registers
     * this memory instead of allocating its own (docs/local-data-path.md).
     *
     * @param enabled true puts a {@code host} DRAM tier in a shared file; other providers are left alone
     * @param directory a directory on tmpfs for the file {@code kvstore-dram-<pid>}
     * @param group a group whose processes may map the tier too (mode 0660); empty for the owner only (0600)
     * @param controlSocket the Unix socket that carries the path's control calls (reserve, commit, cancel,
     *     lease, release) in binary frames, off HTTP; unset: {@code <tier file>.sock} beside the tier's file,
     *     empty: no socket (clients use {@code /v1/local} over HTTP)
     * @param controlMaxConnections control connections served at once (each holds a thread); a connection
     *     beyond is answered 503 and closed
     * @param controlHelloTimeout how long a new control connection may take to send its credentials before it
     *     is closed
     */
    public record Local(
            @DefaultValue("false") boolean enabled,
            @NotNull @DefaultValue("/dev/shm") Path directory,
            @NotNull @DefaultValue("") String group,
            @Nullable String controlSocket,
            @Min(1) @Max(65_536) @DefaultValue("256") int controlMaxConnections,
            @NotNull @DefaultValue("10s") Duration controlHelloTimeout) {

        @AssertTrue(message = "kvstore.local.control-hello-timeout must be positive")
        public boolean isControlHelloTimeoutPositive() {
            return positive(controlHelloTimeout);
        }
    }

    /**
     * One engine API token.
     *
     * @param tenant the tenant it acts for; namespaces it declares belong to that tenant
     * @param token the bearer secret (at least 16 characters)
     * @param read namespaces it may read: names or {@code prefix*} patterns
     * @param write namespaces it may declare, store into, delete (write implies read)
     * @param oneSided whether it may use the one-sided data plane ({@code /v1/transport}, reserve, commit,
     *     lease locations); its region key opens all of DRAM, so only for trusted engines
     * @param admin whether it has the admin role: the admin API ({@code /admin/**}) answers only such tokens
     */
    public record Token(
            @NotBlank String tenant,

            @NotBlank @jakarta.validation.constraints.Size(min = 16)
            String token,

            @NotNull @DefaultValue List<String> read,
            @NotNull @DefaultValue List<String> write,
            @DefaultValue("false") boolean oneSided,
            @DefaultValue("false") boolean admin) {}

    /**
     * Limits on what one request or one tenant may take.
     *
     * @param maxJsonBody the largest JSON request body (lookups, fetch and reserve lists); 413 above
     * @param maxLookupTokens token ids per lookup
     * @param maxBlocksPerRequest block hashes per lookup, fetch, reserve or pin
     * @param maxFramesPerUpload frames per store request
     * @param uploadDeadline how long a whole store request may take
     * @param frameTimeout how long one frame's bytes may take once its slot is taken (a slot is taken only
     *     after the frame's first 64 KiB arrived)
     * @param maxReservationTimeout the longest {@code timeoutSeconds} a reservation may ask
     * @param reservedFractionPerTenant the share of the DRAM tier one tenant may hold in uncommitted
     *     reservations at once; more answers 429
     * @param tierFractionPerTenant the share of each tier's capacity one tenant's blocks may fill, unless
     *     {@code kvstore.tenants.<name>} says otherwise; 1 (the default) leaves tenants unlimited
     * @param maxLeasedBlocksPerTenant blocks one tenant may hold leased at once; more answers 429
     * @param fairLookups whether lookups take turns round-robin by tenant (one turn fewer than virtual-thread
     *     carriers), so one tenant's flood of lookups does not put the other tenants' behind it
     */
    public record Limits(
            @NotNull @DefaultValue("16MB") DataSize maxJsonBody,
            @Min(1) @DefaultValue("1048576") int maxLookupTokens,
            @Min(1) @DefaultValue("65536") int maxBlocksPerRequest,
            @Min(1) @DefaultValue("65536") int maxFramesPerUpload,
            @NotNull @DefaultValue("10m") Duration uploadDeadline,
            @NotNull @DefaultValue("15s") Duration frameTimeout,
            @NotNull @DefaultValue("10m") Duration maxReservationTimeout,
            @DefaultValue("0.5") double reservedFractionPerTenant,
            @DefaultValue("1.0") double tierFractionPerTenant,
            @Min(1) @DefaultValue("1048576") long maxLeasedBlocksPerTenant,
            @DefaultValue("true") boolean fairLookups) {

        @AssertTrue(message = "kvstore.limits.max-json-body must be positive")
        public boolean isMaxJsonBodyPositive() {
            return maxJsonBody == null || maxJsonBody.toBytes() > 0;
        }

        @AssertTrue(message = "kvstore.limits.upload-deadline must be positive")
        public boolean isUploadDeadlinePositive() {
            return positive(uploadDeadline);
        }

        @AssertTrue(message = "kvstore.limits.frame-timeout must be positive")
        public boolean isFrameTimeoutPositive() {
            return positive(frameTimeout);
        }

        @AssertTrue(message = "kvstore.limits.max-reservation-timeout must be positive")
        public boolean isMaxReservationTimeoutPositive() {
            return positive(maxReservationTimeout);
        }

        @AssertTrue(message = "kvstore.limits.tier-fraction-per-tenant must be in (0, 1]")
        public boolean isTierFractionValid() {
            return tierFractionPerTenant > 0 && tierFractionPerTenant <= 1;
        }

        @AssertTrue(message = "kvstore.limits.reserved-fraction-per-tenant must be in (0, 1]")
        public boolean isReservedFractionValid() {
            return reservedFractionPerTenant > 0 && reservedFractionPerTenant <= 1;
        }
    }

    /**
     * One tenant's quotas ({@code kvstore.tenants.<name>.*}); an unset one falls back to the shares of
     * {@code kvstore.limits}. A store or reservation that would pass a tier's quota answers 507, one past
     * {@code reserved} 429; deleting blocks, eviction and demotion out of a tier free quota there.
     *
     * @param hbm bytes the tenant's blocks may fill in the HBM (device) tier
     * @param dram bytes in the DRAM tier
     * @param nvme bytes in the NVMe tier
     * @param reserved bytes the tenant may hold in uncommitted reservations at once
     */
    public record TenantQuota(DataSize hbm, DataSize dram, DataSize nvme, DataSize reserved) {

        @AssertTrue(message = "kvstore.tenants.<tenant>.hbm, dram, nvme and reserved must not be negative")
        public boolean isNotNegative() {
            for (DataSize d : new DataSize[] {hbm, dram, nvme, reserved}) {
                if (d != null && d.isNegative()) {
                    return false;
                }
            }
            return true;
        }
    }

    /** The memory providers a tier may name. */
    static final List<String> PROVIDERS = List.of("host", "emulated-device", "cuda-pinned", "cuda-device");

    /** Whether {@code d} is unset (its own {@code @NotNull} reports that) or longer than zero. */
    private static boolean positive(@Nullable Duration d) {
        return d == null || (!d.isNegative() && !d.isZero());
    }
}
