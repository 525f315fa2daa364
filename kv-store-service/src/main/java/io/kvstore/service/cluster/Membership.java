package io.kvstore.service.cluster;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.databind.json.JsonMapper;

/**
 * This node's membership in the cluster: its key {@code <prefix>members/<name>} lives under an etcd lease
 * this node renews every third of the TTL, so a node that stops renewing (crashed, partitioned) leaves the
 * set within the TTL; every node mirrors the member set with a watch. When etcd forgets the lease (etcd
 * was down longer than the TTL) the node registers again with a new one. While etcd is unreachable the
 * last known set stays in force: nodes keep serving what they hold.
 *
 * <p>Each member's entry carries its join time, so any node, even one that joined a moment ago, knows the
 * sets as they were before each join of the last {@code handoff-grace}: a lookup also asks a run's owners
 * in those sets, which still hold what was stored before the new member took the run (see
 * {@link #recent()}).
 *
 * <p>Each node also publishes its run ({@link Member#boot}) under {@code <prefix>runs/<name>}, on the same lease and
 * in the same transaction as its member key, so peers sign their first call to it for that run. Why a key of its
 * own, not a field of the member record: nodes of the previous release read member records strictly (a property they
 * do not know makes the record unreadable, and they would drop the node from their member set), so a record with a
 * new field would split a cluster being upgraded node by node; they never read {@code runs/}. A node whose run is
 * not published (an older release, a node without the cluster's secret) is a member with no run: its peers learn it
 * from the refusal of their first call, as before.
 */
public final class Membership implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Membership.class);

    private final Client etcd;
    private final Member self;
    private final String key;
    private final String runKey;
    private final long ttlSeconds;
    private final Duration grace;
    private final Clock clock;
    private final JsonMapper json;
    private final long timeoutMillis;
    private final PrefixMirror mirror;
    private final PrefixMirror runsMirror;
    private final ScheduledExecutorService scheduler;
    private final List<Consumer<MemberSet>> listeners = new CopyOnWriteArrayList<>();
    private final List<PrefixMirror> alsoResynced = new CopyOnWriteArrayList<>();
    private final List<Runnable> afterRenewal = new CopyOnWriteArrayList<>();
    private volatile MemberSet current = MemberSet.EMPTY;
    /** The member set as the member keys announce it, no runs: {@link #current} is it with {@link #runs}. */
    private MemberSet announced = MemberSet.EMPTY;
    /** Each node's run as published under {@code runs/}, by node name. */
    private Map<String, String> runs = Map.of();

    private volatile long leaseId;
    /** This node's entry as last written: {@link #self} with the time of its latest (re)registration. */
    private volatile Member entry;

    private volatile boolean etcdReachable = true;
    private volatile boolean closed;

    public Membership(Client etcd, ClusterProperties properties, Member self, JsonMapper json, Clock clock) {
        this.etcd = etcd;
        this.self = self;
        this.entry = self;
        this.key = properties.keyPrefix() + "members/" + self.name();
        this.runKey = properties.keyPrefix() + "runs/" + self.name();
        this.ttlSeconds = properties.ttl().toSeconds();
        this.grace = properties.handoffGrace();
        this.clock = clock;
        this.json = json;
        this.timeoutMillis = Math.max(5000, properties.ttl().toMillis() / 3);
        this.mirror = new PrefixMirror(etcd, properties.keyPrefix() + "members/", this::onMembers, timeoutMillis);
        this.runsMirror = new PrefixMirror(etcd, properties.keyPrefix() + "runs/", this::onRuns, timeoutMillis);
        this.scheduler = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("kvstore-membership").daemon().factory());
    }

    /**
     * Registers this node and reads the member set, retrying for up to a minute (etcd starting, a loaded
     * machine); throws when etcd still cannot be reached.
     */
    public void start() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                register();
                runsMirror.resync();
                mirror.resync();
                break;
            } catch (Exception e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                log.warn("cluster: etcd not reachable yet ({}); retrying", e.toString());
                Thread.sleep(1000);
            }
        }
        long period = Math.max(500, ttlSeconds * 1000 / 3);
        scheduler.scheduleWithFixedDelay(this::renew, period, period, TimeUnit.MILLISECONDS);
        log.info(
                "cluster: node {} at {} joined ({} member(s), epoch {}, lease TTL {} s)",
                self.name(),
                self.address(),
                current.members().size(),
                current.epoch(),
                ttlSeconds);
    }

    private void register() throws Exception {
        register(entry);
    }

    private void register(Member as) throws Exception {
        long lease = etcd.getLeaseClient()
                .grant(ttlSeconds)
                .get(timeoutMillis, TimeUnit.MILLISECONDS)
                .getID();
        PutOption onLease = PutOption.builder().withLeaseId(lease).build();
        List<Op> puts = new ArrayList<>(2);
        puts.add(Op.put(
                PrefixMirror.bytes(key),
                PrefixMirror.bytes(json.writeValueAsString(new Announced(as.name(), as.address(), as.joinedAt()))),
                onLease));
        if (as.boot() != null) {
            puts.add(Op.put(PrefixMirror.bytes(runKey), PrefixMirror.bytes(as.boot()), onLease));
        }
        etcd.getKVClient().txn().Then(puts.toArray(Op[]::new)).commit().get(timeoutMillis, TimeUnit.MILLISECONDS);
        leaseId = lease;
        entry = as;
    }

    /** Renews the lease (registering again if etcd forgot it) and checks the mirror against etcd. */
    private void renew() {
        try {
            long ttl;
            try {
                ttl = etcd.getLeaseClient()
                        .keepAliveOnce(leaseId)
                        .get(timeoutMillis, TimeUnit.MILLISECONDS)
                        .getTTL();
            } catch (java.util.concurrent.ExecutionException e) {
                ttl = 0; // "requested lease not found": etcd let it expire
            }
            if (ttl <= 0) {
                // etcd forgot this node: the others dropped it and gave its runs to others, so it comes back as a
                // join (a new joinedAt): for the hand-off grace, lookups also ask where its runs were meanwhile
                register(self.joinedAgainAt(clock.millis()));
                log.info("cluster: node {} registered again (its lease had expired in etcd)", self.name());
            }
            runsMirror.resync();
            mirror.resync();
            for (PrefixMirror other : alsoResynced) {
                other.resync();
            }
            for (Runnable task : afterRenewal) {
                task.run();
            }
            if (!etcdReachable) {
                etcdReachable = true;
                log.info("cluster: etcd reachable again; node {} is a member", self.name());
            }
        } catch (Exception e) {
            if (etcdReachable && !closed) {
                etcdReachable = false;
                log.warn(
                        "cluster: etcd unreachable ({}); serving with the last known member set of {} node(s)",
                        e.toString(),
                        current.members().size());
            }
        }
    }

    private void onMembers(Map<String, byte[]> entries, Map<String, Long> created, long revision) {
        List<Member> members = new ArrayList<>(entries.size());
        for (byte[] value : entries.values()) {
            try {
                Announced a = json.readValue(value, Announced.class);
                members.add(new Member(a.name(), a.address(), a.joinedAt()));
            } catch (RuntimeException e) {
                log.warn("cluster: ignoring an unreadable member entry: {}", e.getMessage());
            }
        }
        synchronized (this) {
            announced = new MemberSet(members, revision);
        }
        update();
    }

    private void onRuns(Map<String, byte[]> entries, Map<String, Long> created, long revision) {
        Map<String, String> published = new HashMap<>();
        entries.forEach((name, run) -> published.put(name, new String(run, StandardCharsets.UTF_8)));
        synchronized (this) {
            runs = Map.copyOf(published);
        }
        update();
    }

    /** Makes {@link #current} the announced set with each member's run; tells the listeners when a member changed. */
    private void update() {
        MemberSet next;
        MemberSet before;
        synchronized (this) {
            next = new MemberSet(
                    announced.members().stream()
                            .map(m -> m.withBoot(runs.get(m.name())))
                            .toList(),
                    announced.epoch());
            before = current;
            if (before.sameMembers(next)) {
                return;
            }
            current = next;
            if (sameNodes(before, next)) {
                return; // only a run was published: the peers sign for it, placement is unchanged
            }
        }
        log.info(
                "cluster: member set changed at epoch {}: {} (was {})",
                next.epoch(),
                next.members().stream().map(Member::name).toList(),
                before.members().stream().map(Member::name).toList());
        listeners.forEach(l -> l.accept(next));
    }

    /** Whether {@code a} and {@code b} hold the same members, their runs aside. */
    private static boolean sameNodes(MemberSet a, MemberSet b) {
        return a.members().stream()
                .map(m -> m.withBoot(null))
                .toList()
                .equals(b.members().stream().map(m -> m.withBoot(null)).toList());
    }

    /**
     * A member key's value, {@code {"name", "address", "joinedAt"}}, as every release since join times were kept
     * writes it. Properties a later release may add are ignored here (Spring's mapper is strict otherwise).
     */
    @JsonIgnoreProperties(ignoreUnknown = true)
    record Announced(String name, String address, long joinedAt) {}

    /** The live members as last seen. */
    public MemberSet current() {
        return current;
    }

    /**
     * The current set, then for each member that joined less than {@code handoff-grace} ago (newest first)
     * the live members that joined before it: the owners a run had before that join. Members that left are
     * in none of them: what they held is gone with them.
     */
    public List<MemberSet> recent() {
        MemberSet now = current;
        long cutoff = clock.millis() - grace.toMillis();
        List<MemberSet> out = new ArrayList<>(2);
        out.add(now);
        List<Member> joiners = now.members().stream()
                .filter(m -> m.joinedAt() > cutoff)
                .sorted((x, y) -> x.joinedBefore(y) ? 1 : -1)
                .toList();
        for (Member joiner : joiners) {
            List<Member> before =
                    now.members().stream().filter(m -> m.joinedBefore(joiner)).toList();
            if (!before.isEmpty()) {
                out.add(new MemberSet(before, now.epoch()));
            }
        }
        return out;
    }

    public Member self() {
        return self;
    }

    /** Whether the last renewal reached etcd. */
    public boolean etcdReachable() {
        return etcdReachable;
    }

    /** Called with the new set after every change of the member set. */
    public void onChange(Consumer<MemberSet> listener) {
        listeners.add(listener);
    }

    /** Resyncs {@code mirror} with every renewal too, so it is never more than a renewal period behind. */
    void resyncWithRenewals(PrefixMirror mirror) {
        alsoResynced.add(mirror);
    }

    /** Runs {@code task} after every successful renewal (once per third of the TTL). */
    void onRenewal(Runnable task) {
        afterRenewal.add(task);
    }

    /** Leaves the set at once (revokes the lease) rather than after the TTL. */
    @Override
    public void close() {
        closed = true;
        scheduler.shutdownNow();
        mirror.close();
        runsMirror.close();
        try {
            etcd.getLeaseClient().revoke(leaseId).get(timeoutMillis, TimeUnit.MILLISECONDS);
            log.info("cluster: node {} left the cluster", self.name());
        } catch (Exception e) {
            log.warn(
                    "cluster: node {} could not revoke its lease ({}); it leaves within the TTL",
                    self.name(),
                    e.toString());
        }
    }
}
