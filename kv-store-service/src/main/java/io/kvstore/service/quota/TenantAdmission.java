package io.kvstore.service.quota;

import io.kvstore.concurrent.IntervalLog;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.TooManyRequestsException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How many of one tenant's CPU-bound engine calls (lookups, reserves, commits, leases: {@link Admitted}, and
 * the same frames on the local control socket) run at once, so that no tenant starves the others: a tenant
 * runs at most {@code kvstore.tenants.<name>.concurrent-requests}, or else {@code
 * kvstore.limits.max-concurrent-requests-per-tenant}, of them at a time; the rest wait, first come first
 * served, in that tenant's own line. Requests run on virtual threads, answered by whichever core is free in
 * the order they came, so without this one tenant's thousand lookups in flight put every other tenant's
 * lookup behind them all. A call that waited {@code kvstore.limits.admission-wait} is answered 429, naming
 * the limit. Each tenant has its own count; tenants never wait for each other.
 */
public final class TenantAdmission {

    private static final Logger log = LoggerFactory.getLogger(TenantAdmission.class);

    /** A running request's place; closing it lets the tenant's next request run. */
    public interface Permit extends AutoCloseable {
        @Override
        void close();
    }

    private final Map<String, Semaphore> running = new ConcurrentHashMap<>();
    private final KvStoreProperties properties;
    private final long waitNanos;
    private final IntervalLog refusals = new IntervalLog(Duration.ofSeconds(10));

    public TenantAdmission(KvStoreProperties properties) {
        this.properties = properties;
        this.waitNanos = properties.limits().admissionWait().toNanos();
    }

    /** How many of {@code tenant}'s requests run at once. */
    public int concurrentRequests(String tenant) {
        var q = properties.tenants().get(tenant);
        return q != null && q.concurrentRequests() != null
                ? q.concurrentRequests()
                : properties.limits().maxConcurrentRequestsPerTenant();
    }

    /**
     * Waits until the tenant has a place for one more running request and takes it.
     *
     * @throws TooManyRequestsException (429) when none came free within {@code kvstore.limits.admission-wait},
     *     or the wait was interrupted (the service stopping): the request did not run
     */
    public Permit enter(String tenant) {
        Semaphore places = running.computeIfAbsent(tenant, t -> new Semaphore(concurrentRequests(t), true));
        try {
            if (!places.tryAcquire(waitNanos, TimeUnit.NANOSECONDS)) {
                int limit = concurrentRequests(tenant);
                long unlogged = refusals.occurred();
                if (unlogged >= 0) {
                    log.info(
                            "tenant '{}' had {} requests running for {} ms: answered 429{}",
                            tenant,
                            limit,
                            TimeUnit.NANOSECONDS.toMillis(waitNanos),
                            IntervalLog.more(unlogged, "request(s) refused for a tenant's running requests"));
                }
                throw new TooManyRequestsException("tenant '" + tenant + "' has " + limit + " requests running, "
                        + "the most it may (kvstore.limits.max-concurrent-requests-per-tenant, or "
                        + "kvstore.tenants." + tenant + ".concurrent-requests), and none ended within "
                        + TimeUnit.NANOSECONDS.toMillis(waitNanos) + " ms (kvstore.limits.admission-wait); "
                        + "retry later or send fewer requests at once");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TooManyRequestsException("tenant '" + tenant + "': the wait for a place to run was interrupted "
                    + "(kvstore stopping?); the request did not run, retry it");
        }
        return places::release;
    }
}
