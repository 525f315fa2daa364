package io.kvstore.service.security;

import java.util.List;

/**
 * Who sent an engine API request, as its bearer token says: the tenant, the namespaces it may read and
 * write (names or {@code prefix*} patterns; write implies read), and whether it may use the one-sided
 * data plane, whose region key opens the whole DRAM tier, and whether it holds the admin role ({@code /admin}).
 * In protected mode (no engine API tokens configured) every loopback client is {@link #LOCAL}.
 *
 * @param tokenId the token's id ({@code config-N}, {@code admin-token}, or one issued by {@code POST
 *     /admin/tokens}), for logs
 * @param admin whether the token has the admin role: the admin API ({@code /admin/**}) answers only such tokens
 */
public record Caller(
        String tenant, String tokenId, List<String> read, List<String> write, boolean oneSided, boolean admin) {

    /** Request attribute under which the interceptor leaves the caller for handlers. */
    public static final String ATTRIBUTE = "io.kvstore.caller";

    /** The tenant of loopback clients in protected mode, and of namespaces declared then. */
    public static final String LOCAL_TENANT = "local";

    /** A loopback client in protected mode: everything is allowed. */
    public static final Caller LOCAL = new Caller(LOCAL_TENANT, "loopback", List.of("*"), List.of("*"), true, false);

    public Caller {
        read = List.copyOf(read);
        write = List.copyOf(write);
    }

    public boolean mayRead(String namespace) {
        return matchesAny(read, namespace) || matchesAny(write, namespace);
    }

    public boolean mayWrite(String namespace) {
        return matchesAny(write, namespace);
    }

    static boolean matchesAny(List<String> patterns, String name) {
        for (String p : patterns) {
            if (p.endsWith("*") ? name.startsWith(p.substring(0, p.length() - 1)) : name.equals(p)) {
                return true;
            }
        }
        return false;
    }
}
