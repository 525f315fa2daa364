package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.service.api.EngineResponses;
import io.kvstore.service.blocks.BlockFrames;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.error.PayloadTooLargeException;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.security.Caller;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine API for the whole cluster, on whichever node an engine calls: lookups fan out to the owners
 * of a prompt's runs in parallel (one request per owner, the previous owner too during the hand-off grace
 * period) and answer the longest prefix held anywhere; stores go to each run's owners; fetches gather from
 * the nodes holding the blocks. A node that cannot be reached counts as holding nothing, so a lookup stops
 * at its first block rather than failing, and never names a block no live node holds.
 */
public final class ClusterRouter {

    private static final Logger log = LoggerFactory.getLogger(ClusterRouter.class);

    private final Membership membership;
    private final Peers peers;
    private final ClusterProperties properties;
    private final ExecutorService pool;
    private final long maxRequestBytes;

    public ClusterRouter(
            Membership membership,
            Peers peers,
            ClusterProperties properties,
            ExecutorService pool,
            long maxRequestBytes) {
        this.membership = membership;
        this.peers = peers;
        this.properties = properties;
        this.pool = pool;
        this.maxRequestBytes = maxRequestBytes;
    }

    // ---- where blocks are ------------------------------------------------------------------------

    /** For each block asked, the node holding it (null when none) and its tier there; leases per node. */
    record Located(Member[] holders, String[] tiers, Map<Member, Peer.Probe> probes) {}

    /**
     * Asks, in parallel and once each, every node in {@code askees.get(i)} about block i; a block's holder is
     * the first of its askees that has it. Unreachable nodes count as holding nothing.
     */
    private Located locate(
            Caller caller, String namespace, List<BlockHash> hashes, List<List<Member>> askees, boolean lease) {
        Map<Member, List<Integer>> asked = new LinkedHashMap<>();
        for (int i = 0; i < hashes.size(); i++) {
            for (Member m : askees.get(i)) {
                asked.computeIfAbsent(m, k -> new ArrayList<>()).add(i);
            }
        }
        Map<Member, Future<Peer.Probe>> calls = new LinkedHashMap<>();
        for (var e : asked.entrySet()) {
            List<BlockHash> theirs = e.getValue().stream().map(hashes::get).toList();
            Peer peer = peers.of(e.getKey());
            calls.put(e.getKey(), pool.submit(() -> peer.probe(caller, namespace, theirs, lease)));
        }
        Map<Member, Peer.Probe> probes = new LinkedHashMap<>();
        Map<Member, Map<Integer, String>> tierAt = new HashMap<>();
        for (var e : calls.entrySet()) {
            Peer.Probe probe = await(e.getKey(), e.getValue(), "lookup");
            if (probe == null) {
                continue;
            }
            probes.put(e.getKey(), probe);
            List<Integer> indices = asked.get(e.getKey());
            Map<Integer, String> at = new HashMap<>();
            for (int k = 0; k < indices.size() && k < probe.tiers().size(); k++) {
                if (probe.tiers().get(k) != null) {
                    at.put(indices.get(k), probe.tiers().get(k));
                }
            }
            tierAt.put(e.getKey(), at);
        }
        Member[] holders = new Member[hashes.size()];
        String[] tiers = new String[hashes.size()];
        for (int i = 0; i < hashes.size(); i++) {
            for (Member m : askees.get(i)) {
                String tier = tierAt.getOrDefault(m, Map.of()).get(i);
                if (tier != null) {
                    holders[i] = m;
                    tiers[i] = tier;
                    break;
                }
            }
        }
        return new Located(holders, tiers, probes);
    }

    private <T> T await(Member member, Future<T> call, String what) {
        try {
            return call.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        } catch (ExecutionException e) {
            log.warn(
                    "cluster {}: node {} did not answer ({}); its blocks count as missing",
                    what,
                    member.name(),
                    e.getCause().getMessage());
            return null;
        }
    }

    /**
     * The nodes to ask about each block of a chain that begins a run at its first block: the run's owner in
     * the current member set, then its owners in the sets replaced during the grace period, if still live.
     */
    private List<List<Member>> owners(String namespace, List<BlockHash> chain) {
        List<MemberSet> sets = membership.recent();
        Set<String> live = new LinkedHashSet<>();
        sets.getFirst().members().forEach(m -> live.add(m.name()));
        List<BlockHash> keys = Placement.runKeys(chain, properties.runBlocks());
        Map<BlockHash, List<Member>> byKey = new HashMap<>();
        List<List<Member>> out = new ArrayList<>(chain.size());
        for (BlockHash key : keys) {
            out.add(byKey.computeIfAbsent(key, k -> {
                Set<Member> owners = new LinkedHashSet<>();
                for (MemberSet set : sets) {
                    Member owner = Placement.owner(namespace, k, set.members());
                    if (owner != null && live.contains(owner.name())) {
                        owners.add(sets.getFirst().named(owner.name()));
                    }
                }
                return List.copyOf(owners);
            }));
        }
        return out;
    }

    // ---- lookup ----------------------------------------------------------------------------------

    /** The longest prefix of {@code hashes} (a prompt from its first block) held anywhere in the cluster. */
    public ClusterLookupResponse lookup(
            Caller caller, String namespace, NamespaceSpec spec, List<BlockHash> hashes, boolean lease) {
        Located located = locate(caller, namespace, hashes, owners(namespace, hashes), lease);
        int matched = 0;
        while (matched < hashes.size() && located.holders()[matched] != null) {
            matched++;
        }
        List<String> nodes = new ArrayList<>(matched);
        Set<Member> used = new LinkedHashSet<>();
        for (int i = 0; i < matched; i++) {
            nodes.add(located.holders()[i].name());
            used.add(located.holders()[i]);
        }
        List<ClusterLookupResponse.NodeLease> leases = null;
        if (lease) {
            leases = new ArrayList<>();
            for (var e : located.probes().entrySet()) {
                var view = e.getValue().lease();
                if (view == null) {
                    continue;
                }
                if (used.contains(e.getKey())) {
                    leases.add(new ClusterLookupResponse.NodeLease(
                            e.getKey().name(), e.getKey().address(), view));
                } else {
                    // a lease on blocks past the prefix (or held twice) would only pin memory until it expires
                    Peer peer = peers.of(e.getKey());
                    pool.submit(() -> peer.release(caller, view.id()));
                }
            }
        }
        return new ClusterLookupResponse(
                namespace,
                matched,
                (long) matched * spec.blockSize(),
                hashes.subList(0, matched).stream().map(BlockHash::hex).toList(),
                java.util.Arrays.asList(located.tiers()).subList(0, matched),
                nodes,
                leases);
    }

    // ---- store -----------------------------------------------------------------------------------

    private record Frame(BlockFrames.Header header, byte[] bytes) {}

    /**
     * Reads a framed batch and stores each block on its run's owners ({@code replicas} of them), one request
     * per node, in parallel. A batch that starts inside a prompt (its first frame has a parent and begins no
     * run) continues the run of that parent: its leading blocks go to the node holding the parent.
     */
    public EngineResponses.Stored store(
            Caller caller, String namespace, NamespaceSpec spec, InputStream body, long contentLength)
            throws IOException {
        if (contentLength > maxRequestBytes) {
            throw new PayloadTooLargeException(
                    "the body has " + contentLength + " bytes; kvstore.max-request-size is " + maxRequestBytes);
        }
        BlockFrames.Reader reader = new BlockFrames.Reader(body, maxRequestBytes);
        List<Frame> frames = new ArrayList<>();
        BlockFrames.Header header;
        while ((header = reader.next(spec.hashBytes(), spec.blockBytes())) != null) {
            byte[] bytes = new byte[header.length()];
            reader.readBlock(MemorySegment.ofArray(bytes));
            frames.add(new Frame(header, bytes));
        }
        List<Member> members = membership.current().members();
        int replicas = properties.replicasOf(namespace);
        Map<Member, List<Frame>> byNode = new LinkedHashMap<>();
        List<Member> targets = List.of();
        for (int i = 0; i < frames.size(); i++) {
            BlockFrames.Header h = frames.get(i).header();
            boolean chained = i > 0
                    && Objects.equals(h.parent(), frames.get(i - 1).header().hash());
            if (h.parent() == null || Placement.startsRun(h.hash(), properties.runBlocks())) {
                targets = Placement.owners(namespace, h.hash(), members, replicas);
            } else if (!chained) {
                targets = holderOf(caller, namespace, h.parent(), h.hash(), members, replicas);
            }
            for (Member m : targets) {
                byNode.computeIfAbsent(m, k -> new ArrayList<>()).add(frames.get(i));
            }
        }
        Map<Member, Future<EngineResponses.Stored>> calls = new LinkedHashMap<>();
        for (var e : byNode.entrySet()) {
            byte[] batch = framed(e.getValue());
            Peer peer = peers.of(e.getKey());
            calls.put(e.getKey(), pool.submit(() -> peer.store(caller, namespace, batch)));
        }
        Map<String, Integer> tiers = new LinkedHashMap<>();
        IOException failed = null;
        for (var e : calls.entrySet()) {
            try {
                e.getValue().get().tiers().forEach((tier, n) -> tiers.merge(tier, n, Integer::sum));
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new PeerException(503, "interrupted while storing", ie);
            } catch (ExecutionException ee) {
                failed = failed != null ? failed : asIo(ee.getCause());
            }
        }
        if (failed != null) {
            throw failed; // blocks stored elsewhere stay stored; a retry stores the rest (a held block is a no-op)
        }
        long bytes = frames.stream().mapToLong(f -> f.bytes().length).sum();
        return new EngineResponses.Stored(namespace, frames.size(), bytes, tiers);
    }

    /** The node already holding {@code parent}, whose run the batch continues, or else the child's own owners. */
    private List<Member> holderOf(
            Caller caller, String namespace, BlockHash parent, BlockHash child, List<Member> members, int replicas) {
        Located located = locate(caller, namespace, List.of(parent), List.of(askEveryone(members)), false);
        Member holder = located.holders()[0];
        return holder != null ? List.of(holder) : Placement.owners(namespace, child, members, replicas);
    }

    private static List<Member> askEveryone(List<Member> members) {
        return List.copyOf(members);
    }

    private static byte[] framed(List<Frame> frames) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        BlockFrames.Writer writer = new BlockFrames.Writer(out);
        for (Frame f : frames) {
            writer.write(f.header(), MemorySegment.ofArray(f.bytes()));
        }
        return out.toByteArray();
    }

    private static IOException asIo(Throwable t) {
        if (t instanceof IOException io) {
            return io;
        }
        if (t instanceof RuntimeException re) {
            throw re;
        }
        return new IOException(t);
    }

    // ---- fetch -----------------------------------------------------------------------------------

    /** A gathered batch, ready to send in the order asked. */
    public record Gathered(List<BlockFrames.Header> headers, List<byte[]> blocks) {

        public long contentLength() {
            long n = 0;
            for (int i = 0; i < headers.size(); i++) {
                n += headers.get(i).wireBytes() + (long) blocks.get(i).length;
            }
            return n;
        }

        public void writeTo(OutputStream out) throws IOException {
            BlockFrames.Writer writer = new BlockFrames.Writer(out);
            for (int i = 0; i < headers.size(); i++) {
                writer.write(headers.get(i), MemorySegment.ofArray(blocks.get(i)));
            }
        }
    }

    /**
     * Gathers the named blocks from the nodes holding them (one request per node, in parallel); 404 naming
     * the first block no live node holds. The leading blocks, before the first run boundary in the list,
     * may continue a run that began earlier, so every live node is asked about those.
     */
    public Gathered fetch(Caller caller, String namespace, NamespaceSpec spec, List<BlockHash> hashes)
            throws IOException {
        List<List<Member>> askees = owners(namespace, hashes);
        List<Member> everyone = askEveryone(membership.current().members());
        for (int i = 0; i < hashes.size(); i++) {
            if (i > 0 && Placement.startsRun(hashes.get(i), properties.runBlocks())) {
                break;
            }
            Set<Member> all = new LinkedHashSet<>(askees.get(i));
            all.addAll(everyone);
            askees.set(i, List.copyOf(all));
        }
        Located located = locate(caller, namespace, hashes, askees, false);
        Map<Member, List<Integer>> byNode = new LinkedHashMap<>();
        for (int i = 0; i < hashes.size(); i++) {
            Member holder = located.holders()[i];
            if (holder == null) {
                throw new NotFoundException("block " + hashes.get(i).hex() + " (blockHashes[" + i
                        + "]) is not stored on any live node in namespace '" + namespace + "'");
            }
            byNode.computeIfAbsent(holder, k -> new ArrayList<>()).add(i);
        }
        Map<Member, Future<byte[]>> calls = new LinkedHashMap<>();
        for (var e : byNode.entrySet()) {
            List<BlockHash> theirs = e.getValue().stream().map(hashes::get).toList();
            Peer peer = peers.of(e.getKey());
            calls.put(e.getKey(), pool.submit((Callable<byte[]>) () -> peer.fetch(caller, namespace, theirs)));
        }
        BlockFrames.Header[] headers = new BlockFrames.Header[hashes.size()];
        byte[][] blocks = new byte[hashes.size()][];
        for (var e : calls.entrySet()) {
            byte[] batch;
            try {
                batch = e.getValue().get();
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new PeerException(503, "interrupted while fetching", ie);
            } catch (ExecutionException ee) {
                throw asIo(ee.getCause());
            }
            BlockFrames.Reader reader = new BlockFrames.Reader(new ByteArrayInputStream(batch), batch.length);
            for (int index : byNode.get(e.getKey())) {
                BlockFrames.Header h = reader.next(spec.hashBytes(), spec.blockBytes());
                if (h == null || !h.hash().equals(hashes.get(index))) {
                    throw new PeerException(
                            502,
                            "node " + e.getKey().name() + " sent a batch that does not match the blocks asked",
                            null);
                }
                byte[] bytes = new byte[h.length()];
                reader.readBlock(MemorySegment.ofArray(bytes));
                headers[index] = h;
                blocks[index] = bytes;
            }
        }
        return new Gathered(List.of(headers), List.of(blocks));
    }
}
