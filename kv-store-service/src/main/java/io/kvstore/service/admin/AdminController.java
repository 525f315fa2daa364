package io.kvstore.service.admin;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.EvictionReport;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.engine.TierStats;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashInputException;
import io.kvstore.service.blocks.BlockService;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.transport.BackendProbe;
import io.kvstore.service.transport.DeviceStorage;
import io.kvstore.service.transport.TransportService;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** The operators' API under {@code /admin} (bearer token): tiers, eviction policy, evict, pin, backends. */
@RestController
@RequestMapping("/admin")
public class AdminController {

    private final TierEngine engine;
    private final NamespaceRegistry namespaces;
    private final BlockService blocks;
    private final BackendProbe backends;
    private final TransportService transport;

    public AdminController(
            TierEngine engine,
            NamespaceRegistry namespaces,
            BlockService blocks,
            BackendProbe backends,
            TransportService transport) {
        this.engine = engine;
        this.namespaces = namespaces;
        this.blocks = blocks;
        this.backends = backends;
        this.transport = transport;
    }

    /** A tier's policy and watermarks, as read and as written. */
    public record PolicyView(String policy, Double highWatermark, Double lowWatermark) {}

    /** {@code POST /admin/evict}: a tier and a limit in bytes or blocks, or a namespace to evict entirely. */
    public record EvictRequest(String tier, Long bytes, Integer blocks, String namespace) {}

    /** {@code POST /admin/pin|unpin}: a namespace and block hashes, or a token prefix (hashed by the namespace's scheme). */
    public record PinRequest(
            String namespace, List<String> blockHashes, int[] tokenIds, String lora, String cacheSalt) {}

    /** One tier as {@code GET /admin/tiers} shows it. */
    public record TierView(
            String tier,
            String provider,
            boolean emulated,
            long capacityBytes,
            long usedBytes,
            int blocks,
            double highWatermark,
            double lowWatermark,
            String policy,
            boolean promoteOnHit) {

        static TierView of(TierStats s) {
            return new TierView(
                    s.tier().name(),
                    s.provider(),
                    s.emulated(),
                    s.capacityBytes(),
                    s.usedBytes(),
                    s.blocks(),
                    s.settings().highWatermark(),
                    s.settings().lowWatermark(),
                    s.settings().policy().name(),
                    s.settings().promoteOnHit());
        }
    }

    /** {@code GET /admin/tiers}: every configured tier, fastest first. */
    public record Tiers(List<TierView> tiers) {}

    /** {@code POST /admin/evict}: what left the tier. */
    public record Evicted(String tier, int evictedBlocks, long evictedBytes) {}

    /** {@code POST /admin/pin}: how many of the named blocks are now pinned. */
    public record Pinned(int pinnedBlocks) {}

    /** {@code POST /admin/unpin}: how many of the named blocks were unpinned. */
    public record Unpinned(int unpinnedBlocks) {}

    /**
     * One {@code DYN_KVBM_NIXL_BACKEND_*} backend: whether it is enabled, where that came from, and
     * whether it can run here (through NIXL, or its direct fallback) with the detail.
     */
    public record BackendView(boolean enabled, String source, boolean available, String detail) {}

    /**
     * {@code GET /admin/backends}: the resolved backends and the library the one-sided path runs on.
     *
     * @param enabled the backends in use
     * @param summary the start-up log line
     * @param backends every named backend
     * @param dataPlane NIXL or direct UCX, and why
     * @param deviceStorage the HBM tier's path to NVMe (GPUDirect Storage or through host memory), and why
     */
    public record Backends(
            Set<String> enabled,
            String summary,
            Map<String, BackendView> backends,
            TransportService.DataPlaneView dataPlane,
            DeviceStorage.View deviceStorage) {}

    @GetMapping("/tiers")
    public Tiers tiers() {
        return new Tiers(engine.stats().stream().map(TierView::of).toList());
    }

    @GetMapping("/eviction-policy")
    public Map<String, PolicyView> evictionPolicy() {
        Map<String, PolicyView> out = new LinkedHashMap<>();
        for (TierId id : engine.tierIds()) {
            TierSettings s = engine.settings(id);
            out.put(id.name(), new PolicyView(s.policy().name(), s.highWatermark(), s.lowWatermark()));
        }
        return out;
    }

    /**
     * Changes policies and watermarks of the named tiers at once, without losing a block. Everything is
     * validated before anything changes, so a bad entry leaves every tier as it was.
     */
    @PutMapping(path = "/eviction-policy", consumes = MediaType.APPLICATION_JSON_VALUE)
    public Map<String, PolicyView> setEvictionPolicy(@RequestBody Map<String, PolicyView> request) {
        record Change(TierId tier, EvictionPolicyKind policy, double high, double low) {}
        if (request.isEmpty()) { // would change nothing and answer 200, as an entry naming nothing would
            throw new InvalidRequestException("body", "name at least one tier, e.g. {\"DRAM\": {\"policy\": \"lru\"}}");
        }
        List<Change> changes = new ArrayList<>();
        for (var entry : request.entrySet()) {
            TierId tier = tier(entry.getKey(), entry.getKey());
            PolicyView v = entry.getValue();
            // an entry naming none of them (a misspelt key, which Jackson skips) would change nothing and answer 200
            if (v == null || (v.policy() == null && v.highWatermark() == null && v.lowWatermark() == null)) {
                throw new InvalidRequestException(entry.getKey(), entry.getKey() + " needs policy and/or watermarks");
            }
            TierSettings current = engine.settings(tier);
            EvictionPolicyKind kind;
            try {
                kind = v.policy() == null ? current.policy() : EvictionPolicyKind.parse(v.policy());
            } catch (IllegalArgumentException e) {
                throw new InvalidRequestException(
                        entry.getKey() + ".policy", entry.getKey() + ".policy: " + e.getMessage());
            }
            double high = v.highWatermark() == null ? current.highWatermark() : v.highWatermark();
            double low = v.lowWatermark() == null ? current.lowWatermark() : v.lowWatermark();
            if (!(low > 0 && low < high && high <= 1.0)) {
                throw new InvalidRequestException(
                        entry.getKey() + ".highWatermark",
                        entry.getKey() + ": watermarks must satisfy 0 < lowWatermark < highWatermark <= 1, got low "
                                + low + ", high " + high);
            }
            changes.add(new Change(tier, kind, high, low));
        }
        for (Change c : changes) {
            if (engine.settings(c.tier()).policy() != c.policy()) {
                engine.setPolicy(c.tier(), c.policy());
            }
            engine.setWatermarks(c.tier(), c.high(), c.low());
        }
        return evictionPolicy();
    }

    @PostMapping(path = "/evict", consumes = MediaType.APPLICATION_JSON_VALUE)
    public Evicted evict(@RequestBody EvictRequest request) {
        TierId tier = tier(request.tier(), "tier");
        EvictionReport report;
        if (request.namespace() != null) {
            if (request.bytes() != null || request.blocks() != null) {
                throw new InvalidRequestException("namespace", "give a namespace or a limit (bytes, blocks), not both");
            }
            namespaces.require(request.namespace());
            report = engine.evictNamespace(tier, request.namespace());
        } else {
            if (request.bytes() == null && request.blocks() == null) {
                throw new InvalidRequestException("bytes", "one of bytes, blocks or namespace is required");
            }
            if (request.bytes() != null && request.bytes() <= 0) {
                throw new InvalidRequestException("bytes", "bytes must be positive, got " + request.bytes());
            }
            if (request.blocks() != null && request.blocks() <= 0) {
                throw new InvalidRequestException("blocks", "blocks must be positive, got " + request.blocks());
            }
            report = engine.evict(
                    tier,
                    request.bytes() == null ? 0 : request.bytes(),
                    request.blocks() == null ? 0 : request.blocks());
        }
        return new Evicted(tier.name(), report.blocks(), report.bytes());
    }

    @PostMapping(path = "/pin", consumes = MediaType.APPLICATION_JSON_VALUE)
    public Pinned pin(@RequestBody PinRequest request) {
        return new Pinned(engine.pin(keys(request)));
    }

    @PostMapping(path = "/unpin", consumes = MediaType.APPLICATION_JSON_VALUE)
    public Unpinned unpin(@RequestBody PinRequest request) {
        return new Unpinned(engine.unpin(keys(request)));
    }

    @GetMapping("/backends")
    public Backends backends() {
        var resolved = backends.resolved();
        Map<String, BackendView> each = new TreeMap<>();
        for (String name : resolved.sources().keySet()) {
            var availability = BackendProbe.availability(name);
            each.put(
                    name,
                    new BackendView(
                            resolved.enabled().contains(name)
                                    || resolved.unavailable().containsKey(name),
                            resolved.sources().get(name),
                            availability.available(),
                            availability.detail()));
        }
        return new Backends(
                resolved.enabled(), resolved.summary(), each, transport.dataPlane(), transport.deviceStorage());
    }

    /** The blocks a pin request names, validated (namespace declared, hashes well formed or tokens hashed). */
    public List<BlockKey> keys(PinRequest request) {
        if (request.namespace() == null) {
            throw new InvalidRequestException("namespace", "namespace is required");
        }
        NamespaceSpec spec = namespaces.require(request.namespace());
        List<BlockHash> hashes;
        if (request.blockHashes() != null && request.tokenIds() == null) {
            hashes = blocks.parseHashes(spec, request.blockHashes(), "blockHashes");
        } else if (request.tokenIds() != null && request.blockHashes() == null) {
            ExtraKeys extra;
            try {
                extra = new ExtraKeys(request.lora(), request.cacheSalt(), null);
            } catch (HashInputException e) {
                throw new InvalidRequestException(e.field(), e.getMessage());
            }
            hashes = blocks.hashTokens(spec, request.tokenIds(), extra);
        } else {
            throw new InvalidRequestException("blockHashes", "give exactly one of blockHashes or tokenIds");
        }
        return hashes.stream().map(h -> new BlockKey(request.namespace(), h)).toList();
    }

    private TierId tier(String name, String field) {
        if (name == null) {
            throw new InvalidRequestException(field, field + " is required (one of " + engine.tierIds() + ")");
        }
        try {
            TierId id = TierId.valueOf(name.trim().toUpperCase(Locale.ROOT));
            if (engine.tierIds().contains(id)) {
                return id;
            }
        } catch (IllegalArgumentException ignored) {
            // answered below with the configured tiers
        }
        throw new InvalidRequestException(
                field, field + ": tier '" + name + "' is not configured; configured: " + engine.tierIds());
    }
}
