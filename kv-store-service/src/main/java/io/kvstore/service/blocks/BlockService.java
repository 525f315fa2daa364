package io.kvstore.service.blocks;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.catalog.LookupResult;
import io.kvstore.engine.BlockConflictException;
import io.kvstore.engine.BlockInfo;
import io.kvstore.engine.Lease;
import io.kvstore.engine.LeaseLimitException;
import io.kvstore.engine.TierEngine;
import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashInputException;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.ClientGoneException;
import io.kvstore.service.error.ConflictException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.error.PayloadTooLargeException;
import io.kvstore.service.error.TooManyRequestsException;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.quota.ReservationLedger;
import io.kvstore.service.quota.TenantUsage;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.stereotype.Service;

/**
 * What the engine API does, between the HTTP layer and the tier engine: keys from hashes or token ids,
 * namespace layouts enforced on every store, batches streamed between request bodies and tier memory
 * through one off-heap block buffer, fetched blocks held under a lease while they are sent.
 */
@Service
public class BlockService {

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(BlockService.class);

    private final TierEngine engine;
    private final NamespaceRegistry namespaces;
    private final EngineMetrics metrics;
    /** How far up the parent chain a store looks for a cycle it would close. */
    static final int CYCLE_CHECK_DEPTH = 64;

    private final long maxRequestBytes;
    private final KvStoreProperties.Limits limits;
    private final TenantUsage usage;
    private final ReservationLedger reservations;
    private final TierId landing;

    public BlockService(
            TierEngine engine,
            NamespaceRegistry namespaces,
            EngineMetrics metrics,
            KvStoreProperties properties,
            TenantUsage usage,
            ReservationLedger reservations) {
        this.engine = engine;
        this.usage = usage;
        this.reservations = reservations;
        this.landing = engine.tierIds().stream()
                .min(java.util.Comparator.naturalOrder())
                .orElseThrow();
        this.namespaces = namespaces;
        this.metrics = metrics;
        this.maxRequestBytes = properties.maxRequestSize().toBytes();
        this.limits = properties.limits();
        namespaces.all().forEach((name, spec) -> engine.setWriteThrough(name, spec.writeThrough()));
    }

    /** Declares a namespace for {@code tenant} and applies its durability to the engine. */
    public NamespaceRegistry.Outcome declare(String namespace, NamespaceSpec spec, String tenant) {
        // a block held under the name while it is not declared (a delete waits for the stores, reservations and
        // commits under way, but a block may have been put under the name by other means) is not the new
        // declarer's: the namespace starts empty and unbooked. Dropped in one step with recording the new owner,
        // so a block stored through another declaration of the name made at the same time is not a leftover
        var outcome = namespaces.declare(namespace, spec, tenant, () -> {
            int leftover = engine.deleteNamespace(namespace);
            if (leftover > 0) {
                log.info(
                        "namespace '{}' declared anew: {} blocks left from before its last delete dropped",
                        namespace,
                        leftover);
            }
            usage.forget(namespace); // bytes stored under the name before it was declared were booked elsewhere
        });
        engine.setWriteThrough(namespace, spec.writeThrough());
        return outcome;
    }

    /** The outcome of a lookup: the matched prefix, each block's tier, and the lease when one was asked for. */
    public record Match(NamespaceSpec spec, LookupResult result, Lease lease) {}

    /** The hashes a request names directly, checked against the namespace's hash length. */
    public List<BlockHash> parseHashes(NamespaceSpec spec, List<String> hex, String field) {
        if (hex == null) {
            throw new InvalidRequestException(field, field + " is required");
        }
        if (hex.size() > limits.maxBlocksPerRequest()) {
            throw new InvalidRequestException(
                    field,
                    field + " lists " + hex.size() + " hashes; at most " + limits.maxBlocksPerRequest()
                            + " per request (kvstore.limits.max-blocks-per-request)");
        }
        List<BlockHash> hashes = new ArrayList<>(hex.size());
        for (int i = 0; i < hex.size(); i++) {
            // the field's name, field[i], is only spelled out for an error (2,048 per lookup otherwise)
            hashes.add(parseHash(spec, hex.get(i), field, i));
        }
        return hashes;
    }

    /** One hash a request names, checked against the namespace's hash length; {@code field} names it in errors. */
    public BlockHash parseHash(NamespaceSpec spec, String hex, String field) {
        return parseHash(spec, hex, field, -1);
    }

    /** As {@link #parseHash(NamespaceSpec, String, String)}, for element {@code index} of a list (-1: none). */
    private BlockHash parseHash(NamespaceSpec spec, String hex, String field, int index) {
        BlockHash hash;
        try {
            hash = BlockHash.ofHex(hex);
        } catch (IllegalArgumentException e) {
            String name = element(field, index);
            throw new InvalidRequestException(name, name + ": " + e.getMessage());
        }
        if (hash.length() != spec.hashBytes()) {
            String name = element(field, index);
            throw new InvalidRequestException(
                    name,
                    name + " has " + hash.length() + " bytes; "
                            + spec.hashScheme().wireName() + " hashes have " + spec.hashBytes());
        }
        return hash;
    }

    private static String element(String field, int index) {
        return index < 0 ? field : field + "[" + index + "]";
    }

    /** The chained hashes of the full blocks of {@code tokenIds}, by the namespace's scheme. */
    public List<BlockHash> hashTokens(NamespaceSpec spec, int[] tokenIds, ExtraKeys extra) {
        if (tokenIds.length > limits.maxLookupTokens()) {
            throw new InvalidRequestException(
                    "tokenIds",
                    "tokenIds has " + tokenIds.length + " token ids; at most " + limits.maxLookupTokens()
                            + " per request (kvstore.limits.max-lookup-tokens)");
        }
        for (int i = 0; i < tokenIds.length; i++) {
            if (tokenIds[i] < 0) {
                throw new InvalidRequestException(
                        "tokenIds", "tokenIds: token id at position " + i + " is negative (" + tokenIds[i] + ")");
            }
        }
        try {
            return spec.hasher().hashPrompt(tokenIds, spec.blockSize(), extra);
        } catch (HashInputException e) {
            throw new InvalidRequestException("extraKeys." + e.field(), "extraKeys." + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException("tokenIds", "tokenIds: " + e.getMessage());
        }
    }

    /**
     * Leases the leading resident blocks of {@code keys} (of {@code namespace}) for the namespace's tenant,
     * which may hold at most {@code kvstore.limits.max-leased-blocks-per-tenant} leased blocks at once: a lease
     * is memory kept and blocks no eviction can take until it ends, so no tenant may hold without bound.
     *
     * @throws TooManyRequestsException (429) beyond that; nothing is leased
     */
    public Lease lease(String namespace, List<BlockKey> keys, @Nullable Duration timeout) {
        String tenant = Objects.requireNonNullElse(namespaces.owner(namespace), "local");
        try {
            return engine.lease(keys, timeout, tenant, limits.maxLeasedBlocksPerTenant());
        } catch (LeaseLimitException e) {
            throw new TooManyRequestsException("tenant '" + tenant + "' holds " + e.held() + " leased blocks and"
                    + " kvstore.limits.max-leased-blocks-per-tenant allows " + e.limit() + " at once: release leases"
                    + " (DELETE /v1/leases/{id}) or let them expire, then retry");
        }
    }

    /** The longest stored prefix of {@code hashes}; leased until released or {@code kvstore.lease-timeout} when asked. */
    public Match lookup(String namespace, NamespaceSpec spec, List<BlockHash> hashes, boolean lease) {
        long start = System.nanoTime();
        List<BlockKey> keys = keys(namespace, hashes);
        LookupResult result = engine.lookup(namespace, hashes);
        Lease held = null;
        if (lease) {
            held = lease(namespace, result.blocks(), null);
            if (held.blocks().size() < result.matchedBlocks()) {
                // blocks evicted between lookup and lease: answer what is actually held
                result = new LookupResult(
                        held.blocks(), result.tiers().subList(0, held.blocks().size()));
            }
            if (held.blocks().isEmpty()) {
                // a lease of nothing names no block a tenant check could guard it by: none is answered
                engine.release(held.id());
                held = null;
            }
        }
        metrics.lookup(keys.size(), result.tiers(), System.nanoTime() - start);
        return new Match(spec, result, held);
    }

    /** What a store did: blocks and bytes received, and how many went to each tier. */
    public record Stored(int blocks, long bytes, Map<TierId, Integer> tiers) {}

    /**
     * Stores the frames of {@code body} one by one; frames before a failing one stay stored (a retry is
     * harmless, since storing a block that is already held is a no-op).
     */
    public Stored store(String namespace, InputStream body, long contentLength) throws IOException {
        NamespaceSpec spec = namespaces.require(namespace);
        if (contentLength > maxRequestBytes) {
            throw new PayloadTooLargeException(
                    "the body has " + contentLength + " bytes; kvstore.max-request-size is " + maxRequestBytes);
        }
        long start0 = System.nanoTime();
        BlockFrames.Reader reader = new BlockFrames.Reader(
                body,
                maxRequestBytes,
                limits.maxFramesPerUpload(),
                start0 + limits.uploadDeadline().toNanos(),
                limits.frameTimeout().toNanos());
        java.util.Map<BlockHash, BlockHash> parentsInBatch = new java.util.HashMap<>();
        Map<TierId, Integer> tiers = new EnumMap<>(TierId.class);
        int blocks = 0;
        long bytes = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(spec.blockBytes(), 4096);
            BlockFrames.Header header;
            while ((header = reader.next(spec.hashBytes(), spec.blockBytes())) != null) {
                if (header.parent() != null) {
                    refuseCycle(namespace, header.hash(), header.parent(), parentsInBatch, "frame " + reader.frame());
                    parentsInBatch.put(header.hash(), header.parent());
                }
                // no slot is taken before the block's first bytes are here: a trickling body holds none
                reader.stage(block);
                // held until the block is published: a delete of the namespace waits for it, so the block goes with
                // the namespace rather than landing after its delete, under no declaration or the next one's
                NamespaceRegistry.Write write = namespaces.beginWrite(namespace, spec);
                if (write == null) {
                    // deleted (and perhaps declared again, by another tenant) while this upload ran
                    throw new ConflictException("namespace '" + namespace + "' was deleted, is being deleted or was"
                            + " declared again during the upload; frames before frame " + reader.frame()
                            + " were stored under it");
                }
                long start = System.nanoTime();
                TierId tier;
                BlockKey key = new BlockKey(namespace, header.hash());
                // the tenant's quota in the tier the block lands in (a block already held adds nothing)
                try (write;
                        var charge = engine.info(key) != null
                                ? TenantUsage.Charge.NONE
                                : usage.charge(
                                        namespace,
                                        landing,
                                        spec.blockBytes(),
                                        // reservations hold DRAM slots their commits fill without a further check:
                                        // held in DRAM whether the block lands there or in HBM above it
                                        reservations)) {
                    // the body is read straight into a free tier slot, then checksummed there
                    tier = engine.putInPlace(key, header.parent(), spec.blockBytes(), reader::readBlock, block);
                } catch (BlockConflictException differentBytes) {
                    throw new ConflictException("frame " + reader.frame() + ": " + differentBytes.getMessage());
                }
                metrics.transfer(
                        EngineMetrics.HTTP,
                        tier.name(),
                        EngineMetrics.HTTP,
                        block.byteSize(),
                        System.nanoTime() - start);
                tiers.merge(tier, 1, Integer::sum);
                blocks++;
                bytes += block.byteSize();
            }
        }
        return new Stored(blocks, bytes, tiers);
    }

    /**
     * Refuses a parent link that would close a cycle: the parent's chain, followed through this batch and
     * the stored blocks for {@link #CYCLE_CHECK_DEPTH} steps, reaches the block itself. (Lookups walk
     * chains forward and could never match such blocks; the prefix-aware policy also tolerates a cycle
     * that slips past this bound.)
     */
    private void refuseCycle(
            String namespace, BlockHash hash, BlockHash parent, Map<BlockHash, BlockHash> batch, String where) {
        BlockHash at = parent;
        for (int i = 0; i < CYCLE_CHECK_DEPTH && at != null; i++) {
            if (at.equals(hash)) {
                throw new InvalidRequestException(
                        "parent", where + ": block " + hash.hex() + " would be its own ancestor (a parent cycle)");
            }
            BlockHash next = batch.get(at);
            if (next == null) {
                BlockInfo info = engine.info(new BlockKey(namespace, at));
                next = info == null ? null : info.parent();
            }
            at = next;
        }
    }

    /** Refuses a reservation's parent link that would close a cycle (see the store's check). */
    public void refuseCycle(String namespace, BlockHash hash, BlockHash parent, Map<BlockHash, BlockHash> batch) {
        if (hash.equals(parent)) {
            throw new InvalidRequestException("parent", "block " + hash.hex() + " names itself as its parent");
        }
        refuseCycle(namespace, hash, parent, batch, "reservation");
    }

    /** A batch ready to send: the blocks are leased so nothing evicts or deletes them mid-send. */
    public final class Fetch implements AutoCloseable {

        private final Lease lease;
        private final List<BlockFrames.Header> headers;

        private Fetch(Lease lease, List<BlockFrames.Header> headers) {
            this.lease = lease;
            this.headers = headers;
        }

        /**
         * Writes every block, read zero-copy from memory tiers (or through a buffer from NVMe). A block that
         * fails its checksum in every tier, or is gone, becomes a missing frame: the answer stays complete.
         *
         * @return how many blocks went out as missing frames
         */
        public int writeTo(OutputStream out) throws IOException {
            BlockFrames.Writer writer = new BlockFrames.Writer(out);
            int missing = 0;
            for (int i = 0; i < headers.size(); i++) {
                BlockFrames.Header header = headers.get(i);
                long start = System.nanoTime();
                TierId from;
                try {
                    from = engine.read(lease.blocks().get(i), (tier, record, bytes) -> {
                        try {
                            writer.write(header, bytes);
                        } catch (IOException clientGone) {
                            throw new ClientGoneException(
                                    "the client closed the fetch at block "
                                            + header.hash().hex(),
                                    clientGone);
                        }
                        return tier;
                    });
                } catch (IOException unreadable) {
                    // a copy that failed its checksum or could not be read (dropped: BadCopyException), a block
                    // gone, or a tier that failed the read for another reason: verified before a byte of it went
                    // out (the reader above turns a client's I/O error into ClientGoneException), so the client
                    // learns in band which block is missing
                    try {
                        writer.writeMissing(header);
                    } catch (IOException clientGone) {
                        throw new ClientGoneException("the client closed the fetch", clientGone);
                    }
                    metrics.missingFrame();
                    missing++;
                    continue;
                }
                metrics.transfer(
                        from.name(),
                        EngineMetrics.HTTP,
                        EngineMetrics.HTTP,
                        header.length(),
                        System.nanoTime() - start);
            }
            return missing;
        }

        @Override
        public void close() {
            engine.release(lease.id());
        }
    }

    /** Leases every requested block for sending; 404 naming the first that is not stored. */
    public Fetch fetch(String namespace, List<String> hex) {
        NamespaceSpec spec = namespaces.require(namespace);
        List<BlockHash> hashes = parseHashes(spec, hex, "blockHashes");
        Lease lease = lease(namespace, keys(namespace, hashes), Duration.ofMinutes(10));
        List<BlockFrames.Header> headers = new ArrayList<>(hashes.size());
        for (BlockKey key : lease.blocks()) {
            BlockInfo entry = engine.info(key);
            if (entry == null) {
                break;
            }
            headers.add(new BlockFrames.Header(key.hash(), entry.parent(), entry.length()));
        }
        if (headers.size() < hashes.size()) {
            engine.release(lease.id());
            throw new NotFoundException("block " + hashes.get(headers.size()).hex() + " (blockHashes[" + headers.size()
                    + "]) is not stored in namespace '" + namespace + "'");
        }
        return new Fetch(lease, headers);
    }

    /** Deletes one block; 404 when not stored, 409 when pinned or leased. */
    public void delete(String namespace, String hex) {
        NamespaceSpec spec = namespaces.require(namespace);
        BlockKey key =
                new BlockKey(namespace, parseHashes(spec, List.of(hex), "hash").getFirst());
        boolean deleted;
        deleted = engine.delete(key);
        if (!deleted) {
            throw new NotFoundException("block " + hex + " is not stored in namespace '" + namespace + "'");
        }
    }

    /**
     * Deletes every block of the namespace and then its declaration, after the stores, reservations and commits
     * under way in it (which it waits for; new ones are refused meanwhile); 409 when pinned or leased blocks remain
     * (they are kept, with the declaration, until unpinned or released), reservations are open, or stores are still
     * in progress after {@code kvstore.limits.frame-timeout}.
     */
    public int deleteNamespace(String namespace) {
        return deleteNamespace(namespace, limits.frameTimeout());
    }

    /**
     * As {@link #deleteNamespace(String)}, waiting at most {@code writesWait} for the writes under way (409 after):
     * for a caller that must not be held a frame timeout, such as the cluster settings on the membership's thread.
     */
    public int deleteNamespace(String namespace, Duration writesWait) {
        namespaces.require(namespace);
        // no store, reservation or commit begins from here on, and those under way end first (a store's block
        // filling its slot from the socket may take up to the frame timeout): their blocks go with the namespace
        try (NamespaceRegistry.Deletion deletion = namespaces.beginDelete(namespace, writesWait)) {
            if (reservations.openIn(namespace)) {
                // a commit after the delete would land under a name that may by then be declared anew
                throw new ConflictException("namespace '" + namespace + "' has open reservations; commit or cancel "
                        + "them (or let them expire) and delete again");
            }
            int deleted = engine.deleteNamespace(namespace);
            int left = engine.namespaceBlockCount(namespace);
            if (left > 0) {
                throw new ConflictException("namespace '" + namespace + "': " + deleted + " blocks deleted, " + left
                        + " pinned or leased blocks remain; unpin or release them and delete again");
            }
            deletion.remove();
            usage.forget(namespace);
            engine.setWriteThrough(namespace, false);
            return deleted;
        }
    }

    /** Releases a lease; 404 when unknown, already released or expired. */
    public void release(String leaseId) {
        if (!engine.release(leaseId)) {
            throw new NotFoundException("lease '" + leaseId + "' is unknown, released or expired");
        }
    }

    public Lease lease(String leaseId) {
        Lease lease = engine.leaseById(leaseId);
        if (lease == null) {
            throw new NotFoundException("lease '" + leaseId + "' is unknown, released or expired");
        }
        return lease;
    }

    static List<BlockKey> keys(String namespace, List<BlockHash> hashes) {
        List<BlockKey> keys = new ArrayList<>(hashes.size());
        for (BlockHash h : hashes) {
            keys.add(new BlockKey(namespace, h));
        }
        return keys;
    }
}
