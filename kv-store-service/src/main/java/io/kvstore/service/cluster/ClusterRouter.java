package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.block.TierId;
import io.kvstore.concurrent.IntervalLog;
import io.kvstore.service.api.EngineResponses;
import io.kvstore.service.blocks.BlockFrames;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.error.PayloadTooLargeException;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.service.namespace.NamespaceSpec;
import io.kvstore.service.security.Caller;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
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
import org.jspecify.annotations.Nullable;
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
    /** At most one line per this long for peers that did not answer: a dead node fails each call until it leaves. */
    private static final Duration UNREACHABLE_LOG_INTERVAL = Duration.ofSeconds(10);

    private final IntervalLog unansweredLookups = new IntervalLog(UNREACHABLE_LOG_INTERVAL);
    private final IntervalLog skippedCalls = new IntervalLog(UNREACHABLE_LOG_INTERVAL);
    private final Membership membership;
    private final Peers peers;
    private final ClusterProperties properties;
    private final ExecutorService pool;
    private final long maxRequestBytes;
    private final EngineMetrics metrics;

    public ClusterRouter(
            Membership membership,
            Peers peers,
            ClusterProperties properties,
            ExecutorService pool,
            long maxRequestBytes,
            EngineMetrics metrics) {
        this.metrics = metrics;
        this.membership = membership;
        this.peers = peers;
        this.properties = properties;
        this.pool = pool;
        this.maxRequestBytes = maxRequestBytes;
    }

    /** How many nodes hold each block of {@code namespace}. */
    int replicas(String namespace) {
        return properties.replicasOf(namespace);
    }

    // ---- where blocks are ------------------------------------------------------------------------

    /** One node's answer to a probe. */
    record Answer(Member member, Peer.Probe probe) {}

    /**
     * For each block asked, the node holding it (null when none), its tier there and the answer that said
     * so; every answer received (each may carry a lease).
     */
    record Located(Member[] holders, String[] tiers, Answer[] from, List<Answer> answers) {}

    /**
     * The nodes to ask about each block: {@code first} (its run's owner, and its previous owners during the
     * grace period), and its replicas, asked only when a node asked first did not answer.
     */
    record Askees(List<List<Member>> first, List<List<Member>> replicas) {

        static Askees only(List<List<Member>> first) {
            return new Askees(first, java.util.Collections.nCopies(first.size(), List.of()));
        }
    }

    /**
     * Asks, in parallel and once each, every node in {@code askees.first().get(i)} about block i; a block's
     * holder is the first of its askees that has it. Unreachable nodes count as holding nothing; a block one
     * of whose askees did not answer is asked of its replicas next (one more round, again one request per
     * node), so with replicas a node that died is not a miss even before its lease expires. Per block it
     * keeps only arrays (a 2,048-block lookup is on the latency path of every cluster lookup): which nodes
     * were asked is read back from the rounds themselves, and each answer is spread over a per-node array
     * indexed like {@code hashes}.
     */
    private Located locate(Caller caller, String namespace, List<BlockHash> hashes, Askees askees, boolean lease) {
        int n = hashes.size();
        Member[] holders = new Member[n];
        String[] tiers = new String[n];
        Answer[] from = new Answer[n];
        List<Answer> answers = new ArrayList<>();
        Set<Member> failed = new HashSet<>();
        List<List<List<Member>>> earlier = new ArrayList<>();
        List<List<Member>> round = askees.first();
        while (true) {
            Map<Member, Indices> asked = new LinkedHashMap<>();
            // the blocks of a run share one list of askees (owners()), so in the first round a block whose
            // list is the previous block's goes where that one went, without hashing a member per block
            boolean firstRound = earlier.isEmpty();
            List<Member> previous = null;
            List<Indices> previousTargets = List.of();
            for (int i = 0; i < n; i++) {
                List<Member> candidates = round.get(i);
                if (firstRound && candidates == previous) {
                    for (int t = 0; t < previousTargets.size(); t++) {
                        previousTargets.get(t).add(i);
                    }
                    continue;
                }
                List<Indices> targets = new ArrayList<>(candidates.size());
                for (int k = 0; k < candidates.size(); k++) {
                    Member m = candidates.get(k);
                    if (candidates.indexOf(m) == k && !askedBefore(earlier, i, m)) {
                        Indices to = asked.computeIfAbsent(m, key -> new Indices());
                        to.add(i);
                        targets.add(to);
                    }
                }
                previous = candidates;
                previousTargets = targets;
            }
            if (asked.isEmpty()) {
                break;
            }
            earlier.add(round);
            Map<Member, RemotePeer.SentProbe> calls = new LinkedHashMap<>();
            Map<Member, Long> sentAt = new HashMap<>();
            Member self = null;
            for (var e : asked.entrySet()) {
                Member member = e.getKey();
                switch (peers.of(member)) {
                    case LocalPeer _ -> self = member;
                    case RemotePeer remote -> {
                        // every probe is written before any answer is read; this thread reads them all below
                        sentAt.put(member, System.nanoTime());
                        calls.put(
                                member,
                                remote.sendProbe(caller, namespace, e.getValue().of(hashes), lease));
                    }
                }
            }
            if (self != null) {
                // this node's share is looked up here, while the other nodes answer theirs
                List<BlockHash> ours = asked.get(self).of(hashes);
                RemotePeer.SentProbe local;
                try {
                    Peer.Probe answer = peers.of(peers.self()).probe(caller, namespace, ours, lease);
                    local = () -> answer;
                } catch (IOException | RuntimeException e) {
                    local = () -> {
                        throw e instanceof PeerException p ? p : new PeerException(500, e.toString(), e);
                    };
                }
                calls.put(self, local);
            }
            Map<Member, Answer> answered = new HashMap<>();
            Map<Member, String[]> tierAt = new HashMap<>();
            for (var e : calls.entrySet()) {
                Peer.Probe probe = await(e.getKey(), e.getValue(), sentAt.get(e.getKey()));
                if (probe == null) {
                    failed.add(e.getKey());
                    continue;
                }
                Answer answer = new Answer(e.getKey(), probe);
                answers.add(answer);
                answered.put(e.getKey(), answer);
                Indices indices = asked.get(e.getKey());
                String[] at = new String[n];
                for (int k = 0; k < indices.size() && k < probe.tiers().size(); k++) {
                    at[indices.at(k)] = probe.tiers().get(k);
                }
                tierAt.put(e.getKey(), at);
            }
            spread(round, tierAt, answered, holders, tiers, from);
            if (failed.isEmpty()) {
                break; // every node asked answered: no block needs its replicas, so no further round
            }
            List<List<Member>> next = new ArrayList<>(n);
            List<Member> previousAskees = null;
            boolean anyFailed = false;
            for (int i = 0; i < n; i++) {
                List<Member> askeesOf = round.get(i);
                if (askeesOf != previousAskees) {
                    previousAskees = askeesOf;
                    anyFailed = askeesOf.stream().anyMatch(failed::contains);
                }
                if (holders[i] == null && anyFailed) {
                    next.add(askees.replicas().get(i).stream()
                            .filter(m -> !failed.contains(m))
                            .toList());
                } else {
                    next.add(List.of());
                }
            }
            round = next;
        }
        return new Located(holders, tiers, from, answers);
    }

    /**
     * Records, for each block still without a holder, the first of its askees in {@code round} whose answer
     * holds it. Blocks of a run share one list of askees, so each list's answers are looked up once, not per
     * block.
     */
    private static void spread(
            List<List<Member>> round,
            Map<Member, String[]> tierAt,
            Map<Member, Answer> answered,
            Member[] holders,
            String[] tiers,
            Answer[] from) {
        List<Member> previous = null;
        String[][] at = new String[0][];
        for (int i = 0; i < holders.length; i++) {
            if (holders[i] != null) {
                continue;
            }
            List<Member> askeesOf = round.get(i);
            if (askeesOf != previous) {
                previous = askeesOf;
                at = new String[askeesOf.size()][];
                for (int k = 0; k < at.length; k++) {
                    at[k] = tierAt.get(askeesOf.get(k));
                }
            }
            for (int k = 0; k < at.length; k++) {
                if (at[k] != null && at[k][i] != null) {
                    Member m = askeesOf.get(k);
                    holders[i] = m;
                    tiers[i] = at[k][i];
                    from[i] = answered.get(m);
                    break;
                }
            }
        }
    }

    /** Whether block {@code i} was asked of {@code m} in an earlier round (a node is asked once per block). */
    private static boolean askedBefore(List<List<List<Member>>> earlier, int i, Member m) {
        for (List<List<Member>> round : earlier) {
            if (round.get(i).contains(m)) {
                return true;
            }
        }
        return false;
    }

    /** The positions in a lookup's hashes asked of one node, in order, without boxing. */
    private static final class Indices {
        private int[] at = new int[64];
        private int size;

        void add(int i) {
            if (size == at.length) {
                at = java.util.Arrays.copyOf(at, size * 2);
            }
            at[size++] = i;
        }

        int size() {
            return size;
        }

        int at(int k) {
            return at[k];
        }

        List<BlockHash> of(List<BlockHash> hashes) {
            BlockHash[] out = new BlockHash[size];
            for (int k = 0; k < size; k++) {
                out[k] = hashes.get(at[k]);
            }
            return List.of(out);
        }
    }

    /** A probe's answer, or null (logged) when the node did not answer; a peer's round trip is metered. */
    private Peer.Probe await(Member member, RemotePeer.SentProbe call, Long sentAt) {
        try {
            return call.answer();
        } catch (PeerException e) {
            long unlogged = unansweredLookups.occurred();
            if (unlogged >= 0) {
                log.warn(
                        "cluster lookup: node {} did not answer ({}); its blocks count as missing{}",
                        member.name(),
                        e.getMessage(),
                        IntervalLog.more(unlogged, "probe(s) unanswered"));
            }
            return null;
        } finally {
            if (sentAt != null) {
                metrics.peerProbe(member.name(), System.nanoTime() - sentAt);
            }
        }
    }

    /**
     * The nodes to ask about each block of a chain that begins a run at its first block: the run's owner in
     * the current member set, then its owners in the sets replaced during the grace period, if still live;
     * with replicas, the run's other holders in the current set as the fallback.
     */
    private Askees owners(String namespace, List<BlockHash> chain) {
        List<MemberSet> sets = membership.recent();
        MemberSet now = sets.getFirst();
        List<Member> current = now.members();
        int replicas = properties.replicasOf(namespace);
        // a run's blocks share its key (the hash of its first block, the same object for the whole run), so
        // each run's owners are computed once, at its start, and its blocks share that one list (which
        // locate() relies on to group them without per-block hashing)
        List<BlockHash> keys = Placement.runKeys(chain, properties.runBlocks());
        List<List<Member>> first = new ArrayList<>(chain.size());
        List<List<Member>> fallback = new ArrayList<>(chain.size());
        BlockHash runKey = null;
        List<Member> owners = List.of();
        List<Member> others = List.of();
        for (BlockHash key : keys) {
            if (key != runKey) {
                runKey = key;
                Set<Member> out = new LinkedHashSet<>();
                for (MemberSet set : sets) {
                    Member owner = Placement.owner(namespace, key, set.members());
                    Member live = owner == null ? null : now.named(owner.name());
                    if (live != null) {
                        out.add(live);
                    }
                }
                owners = List.copyOf(out);
                List<Member> firstAsked = owners;
                others = replicas <= 1
                        ? List.of()
                        : Placement.owners(namespace, key, current, replicas).stream()
                                .filter(m -> !firstAsked.contains(m))
                                .toList();
            }
            first.add(owners);
            fallback.add(others);
        }
        return new Askees(first, fallback);
    }

    // ---- lookup ----------------------------------------------------------------------------------

    /**
     * The longest prefix of {@code hashes} (a prompt from its first block) held anywhere in the cluster;
     * the answer's {@code blockHashes} are the matched blocks', or with {@code allHashes} every one of
     * {@code hashes}, stored or not (as a single node answers).
     */
    public ClusterLookupResponse lookup(
            Caller caller,
            String namespace,
            NamespaceSpec spec,
            List<BlockHash> hashes,
            boolean lease,
            boolean allHashes) {
        long start = System.nanoTime();
        Located located = locate(caller, namespace, hashes, owners(namespace, hashes), lease);
        int matched = 0;
        while (matched < hashes.size() && located.holders()[matched] != null) {
            matched++;
        }
        // the answer's lists are all of one class (as the single-node answer's are), so the serialiser's
        // per-element get() stays monomorphic: 2,048 x 3 elements per lookup
        List<String> nodes = java.util.Arrays.stream(located.holders(), 0, matched)
                .map(Member::name)
                .toList();
        List<ClusterLookupResponse.NodeLease> leases = null;
        if (lease) {
            Set<Answer> used = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            for (int i = 0; i < matched; i++) {
                used.add(located.from()[i]);
            }
            leases = new ArrayList<>();
            for (Answer answer : located.answers()) {
                var view = answer.probe().lease();
                if (view == null) {
                    continue;
                }
                if (used.contains(answer)) {
                    leases.add(new ClusterLookupResponse.NodeLease(
                            answer.member().name(), answer.member().address(), view));
                } else {
                    // a lease on blocks past the prefix (or held twice) would only pin memory until it expires
                    Peer peer = peers.of(answer.member());
                    pool.submit(() -> peer.release(caller, view.id()));
                }
            }
        }
        List<String> tiers =
                java.util.Arrays.stream(located.tiers(), 0, matched).toList();
        // counted where the engine asked, as on a single node; the probes it sent are not lookups
        metrics.lookup(hashes.size(), tiers.stream().map(TierId::valueOf).toList(), System.nanoTime() - start);
        return new ClusterLookupResponse(
                namespace,
                matched,
                (long) matched * spec.blockSize(),
                (allHashes ? hashes : hashes.subList(0, matched))
                        .stream().map(BlockHash::hex).toList(),
                tiers,
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
        List<BlockHash> hashes = new ArrayList<>(frames.size());
        List<BlockHash> parents = new ArrayList<>(frames.size());
        for (Frame f : frames) {
            hashes.add(f.header().hash());
            parents.add(f.header().parent());
        }
        Map<Member, List<Frame>> byNode = new LinkedHashMap<>();
        writeTargets(caller, namespace, hashes, parents)
                .forEach((m, indices) ->
                        byNode.put(m, indices.stream().map(frames::get).toList()));
        if (byNode.isEmpty() && !frames.isEmpty()) {
            throw new PeerException(
                    503,
                    "this node knows no cluster member yet (no member set read from etcd): nothing was stored",
                    null);
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

    /**
     * The nodes each block of a batch is written to, as block indices per node: a block that begins a prompt
     * or a run goes to that run's owners (the namespace's replica count of them) and the blocks chained after
     * it follow it; a batch whose first block continues a run that began earlier goes where its parent is.
     */
    Map<Member, List<Integer>> writeTargets(
            Caller caller, String namespace, List<BlockHash> hashes, List<BlockHash> parents) {
        List<Member> members = membership.current().members();
        int replicas = properties.replicasOf(namespace);
        Map<Member, List<Integer>> byNode = new LinkedHashMap<>();
        List<Member> targets = List.of();
        for (int i = 0; i < hashes.size(); i++) {
            BlockHash hash = hashes.get(i);
            BlockHash parent = parents.get(i);
            boolean chained = i > 0 && Objects.equals(parent, hashes.get(i - 1));
            if (parent == null || Placement.startsRun(hash, properties.runBlocks())) {
                targets = Placement.owners(namespace, hash, members, replicas);
            } else if (!chained) {
                targets = holderOf(caller, namespace, parent, hash, members, replicas);
            }
            for (Member m : targets) {
                byNode.computeIfAbsent(m, k -> new ArrayList<>()).add(i);
            }
        }
        return byNode;
    }

    /**
     * The nodes already holding {@code parent}, whose run the batch continues (up to {@code replicas} of them:
     * the run's owner and its replicas each hold it, and each keeps the continuation), or else the child's own
     * owners.
     */
    private List<Member> holderOf(
            Caller caller, String namespace, BlockHash parent, BlockHash child, List<Member> members, int replicas) {
        Located located = locate(caller, namespace, List.of(parent), Askees.only(List.of(askEveryone(members))), false);
        Set<Member> holding = new HashSet<>();
        for (Answer answer : located.answers()) {
            if (!answer.probe().tiers().isEmpty() && answer.probe().tiers().getFirst() != null) {
                holding.add(answer.member());
            }
        }
        List<Member> holders = new ArrayList<>();
        for (Member m : members) {
            if (holding.contains(m) && holders.size() < replicas) {
                holders.add(m);
            }
        }
        return !holders.isEmpty() ? holders : Placement.owners(namespace, child, members, replicas);
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

    // ---- delete --------------------------------------------------------------------------------

    /**
     * Deletes a block on every live node that holds it (its owner, a previous owner, replicas: asking all
     * costs one small request per node and misses none). 409 when a node holds it pinned or leased (the
     * other copies are deleted), 404 when no live node holds it; a node that cannot be reached is skipped.
     */
    public void delete(Caller caller, String namespace, BlockHash hash) throws IOException {
        int deleted = 0;
        for (var e : onEveryNode("delete", peer -> peer.delete(caller, namespace, hash))
                .entrySet()) {
            deleted += Boolean.TRUE.equals(e.getValue()) ? 1 : 0;
        }
        if (deleted == 0) {
            throw new NotFoundException(
                    "block " + hash.hex() + " is not stored on any live node in namespace '" + namespace + "'");
        }
    }

    /**
     * Deletes the namespace and its blocks on every live node; how many blocks were deleted. 409 when a node
     * holds some pinned or leased (the namespace is deleted elsewhere; delete again once they are released).
     */
    public int deleteNamespace(Caller caller, String namespace) throws IOException {
        int deleted = 0;
        for (Integer n : onEveryNode("namespace delete", peer -> peer.deleteNamespace(caller, namespace))
                .values()) {
            deleted += Math.max(0, n);
        }
        return deleted;
    }

    private interface PeerCall<T> {
        T call(Peer peer) throws IOException;
    }

    /**
     * Makes one call on every live node in parallel; their answers by node. A node that cannot be reached is
     * left out (logged); the first refusal (a 4xx from a node) is thrown once every node has answered.
     */
    private <T> Map<Member, T> onEveryNode(String what, PeerCall<T> call) throws IOException {
        Map<Member, Future<T>> calls = new LinkedHashMap<>();
        for (Member m : membership.current().members()) {
            Peer peer = peers.of(m);
            calls.put(m, pool.submit(() -> call.call(peer)));
        }
        Map<Member, T> out = new LinkedHashMap<>();
        IOException refused = null;
        for (var e : calls.entrySet()) {
            try {
                out.put(e.getKey(), e.getValue().get());
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new PeerException(503, "interrupted during cluster " + what, ie);
            } catch (ExecutionException ee) {
                if (ee.getCause() instanceof PeerException pe && pe.unreachable()) {
                    long unlogged = skippedCalls.occurred();
                    if (unlogged >= 0) {
                        log.warn(
                                "cluster {}: node {} skipped: {}{}",
                                what,
                                e.getKey().name(),
                                pe.getMessage(),
                                IntervalLog.more(unlogged, "node call(s) skipped"));
                    }
                } else if (refused == null) {
                    refused = asIo(ee.getCause());
                }
            }
        }
        if (refused != null) {
            throw refused;
        }
        return out;
    }

    // ---- fetch -----------------------------------------------------------------------------------

    /**
     * A gathered batch, ready to send in the order asked. A block its node answered as a missing frame (it
     * failed its checksum there, or was gone) has no bytes and goes out as a missing frame again.
     */
    public record Gathered(List<BlockFrames.Header> headers, List<byte @Nullable []> blocks) {

        public long contentLength() {
            long n = 0;
            for (int i = 0; i < headers.size(); i++) {
                byte[] block = blocks.get(i);
                n += headers.get(i).wireBytes() + (block == null ? 0L : block.length);
            }
            return n;
        }

        public void writeTo(OutputStream out) throws IOException {
            BlockFrames.Writer writer = new BlockFrames.Writer(out);
            for (int i = 0; i < headers.size(); i++) {
                byte[] block = blocks.get(i);
                if (block == null) {
                    writer.writeMissing(headers.get(i));
                } else {
                    writer.write(headers.get(i), MemorySegment.ofArray(block));
                }
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
        Askees owners = owners(namespace, hashes);
        List<List<Member>> first = new ArrayList<>(owners.first());
        List<Member> everyone = askEveryone(membership.current().members());
        for (int i = 0; i < hashes.size(); i++) {
            if (i > 0 && Placement.startsRun(hashes.get(i), properties.runBlocks())) {
                break;
            }
            Set<Member> all = new LinkedHashSet<>(first.get(i));
            all.addAll(everyone);
            first.set(i, List.copyOf(all));
        }
        Askees askees = new Askees(first, owners.replicas());
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
                BlockFrames.Header h = reader.nextAnswer(spec.hashBytes(), spec.blockBytes());
                if (h == null || !h.hash().equals(hashes.get(index))) {
                    throw new PeerException(
                            502,
                            "node " + e.getKey().name() + " sent a batch that does not match the blocks asked",
                            null);
                }
                headers[index] = h;
                if (h.missing()) {
                    continue; // its node could not send it (failed its checksum there, or gone): so say we
                }
                byte[] bytes = new byte[h.length()];
                reader.readBlock(MemorySegment.ofArray(bytes));
                blocks[index] = bytes;
            }
        }
        return new Gathered(List.of(headers), Arrays.asList(blocks)); // a missing frame's block is null
    }
}
