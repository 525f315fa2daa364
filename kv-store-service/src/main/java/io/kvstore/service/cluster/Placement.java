package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Which members own a block: rendezvous (highest-random-weight) hashing of the block's run key over the
 * live members. A pure function of its arguments, so every node that sees the same member set places
 * every block the same way.
 *
 * <p><b>Runs.</b> A prompt's blocks are placed in runs, one owner per run, not one owner per block
 * (a lookup would touch every node for every prompt) and not one owner per prompt (every prompt sharing
 * a system prompt would land on the node owning its first block). A run begins at a prompt's first block
 * and at every block whose hash, mixed, is 0 modulo {@code runBlocks}; every block of a run is placed by
 * its run's first block (the run key). The boundaries are content-defined rather than every N-th position
 * because a store or fetch names blocks by hash, not by position: a batch that starts inside a prompt
 * still sees where the next run begins from the hashes alone. Runs are geometric with mean
 * {@code runBlocks}; a 2,048-block prompt with runs of 16 spreads over about 128 runs, so over every
 * member, while a short prompt stays on one node. Blocks of a chain share the run key of their ancestors,
 * so a shared prefix is placed identically whichever prompt stores it.
 *
 * <p><b>Owners.</b> Each member's weight for a run key is a 64-bit mix of the member's name hash, the
 * namespace hash and the key; the highest weights win ({@code replicas} of them). When a member joins,
 * it takes exactly the runs where it now weighs most (about 1/n of them); when one leaves, only its runs
 * move, each to its own next-highest member. No ring, no virtual nodes, no coordination.
 */
public final class Placement {

    /** Salt that keeps the run-boundary test independent of the owner weights. */
    private static final long RUN_SALT = 0xC4D3D905B78DB2F1L; // 0x5DEECE66D * 0x9E3779B97F4A7C15, wrapped

    private Placement() {}

    /** Whether a block with this hash begins a new run (a prompt's first block always does). */
    public static boolean startsRun(BlockHash hash, int runBlocks) {
        return runBlocks == 1 || Long.remainderUnsigned(mix(hash.asLong() ^ RUN_SALT), runBlocks) == 0;
    }

    /**
     * The run key of each block of a chain whose first block begins a run (a prompt from its first
     * block): the hash of the block that began its run.
     */
    public static List<BlockHash> runKeys(List<BlockHash> chain, int runBlocks) {
        List<BlockHash> keys = new ArrayList<>(chain.size());
        BlockHash current = null;
        for (int i = 0; i < chain.size(); i++) {
            BlockHash h = chain.get(i);
            if (i == 0 || startsRun(h, runBlocks)) {
                current = h;
            }
            keys.add(current);
        }
        return keys;
    }

    /** The first owner of {@code runKey} in {@code members}, or null when there are none. */
    public static Member owner(String namespace, BlockHash runKey, List<Member> members) {
        List<Member> owners = owners(namespace, runKey, members, 1);
        return owners.isEmpty() ? null : owners.getFirst();
    }

    /**
     * The {@code replicas} members (fewer when there are fewer members) weighing most for {@code runKey},
     * highest first.
     */
    public static List<Member> owners(String namespace, BlockHash runKey, List<Member> members, int replicas) {
        int n = Math.min(replicas, members.size());
        Member[] best = new Member[n];
        long[] weights = new long[n];
        long key = mix(runKey.asLong() ^ seed(namespace));
        for (Member m : members) {
            long w = weight(seed(m.name()), key);
            // insertion into the top-n by unsigned weight; ties broken by name so the order is total
            int i = n;
            while (i > 0 && greater(w, m, weights[i - 1], best[i - 1])) {
                i--;
            }
            if (i < n) {
                System.arraycopy(best, i, best, i + 1, n - i - 1);
                System.arraycopy(weights, i, weights, i + 1, n - i - 1);
                best[i] = m;
                weights[i] = w;
            }
        }
        return List.of(best);
    }

    private static boolean greater(long w, Member m, long other, Member otherMember) {
        if (otherMember == null) {
            return true;
        }
        int c = Long.compareUnsigned(w, other);
        return c > 0 || (c == 0 && m.name().compareTo(otherMember.name()) < 0);
    }

    static long weight(long memberSeed, long key) {
        return mix(memberSeed ^ key);
    }

    /** A 64-bit hash of a name (FNV-1a over UTF-8, then mixed). */
    static long seed(String s) {
        long h = 0xcbf29ce484222325L;
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h ^= b & 0xFF;
            h *= 0x100000001b3L;
        }
        return mix(h);
    }

    /** The SplitMix64 / Murmur3 finaliser: every input bit moves every output bit. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
