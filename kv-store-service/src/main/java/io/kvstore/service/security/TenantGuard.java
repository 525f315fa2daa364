package io.kvstore.service.security;

import io.kvstore.block.BlockKey;
import io.kvstore.engine.Lease;
import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.namespace.NamespaceRegistry;
import org.springframework.stereotype.Component;

/**
 * What a caller may do to a namespace: its token must grant the name (read, or write), and a declared
 * namespace must belong to the caller's tenant, so one tenant never sees, fetches, deletes or reserves
 * in another's blocks even where token patterns overlap. The one-sided data plane needs a token that
 * grants it (its region key opens the whole DRAM tier).
 */
@Component
public class TenantGuard {

    private final NamespaceRegistry namespaces;

    public TenantGuard(NamespaceRegistry namespaces) {
        this.namespaces = namespaces;
    }

    public void requireRead(Caller caller, String namespace) {
        if (!caller.mayRead(namespace) || !ownedBy(caller, namespace)) {
            throw denied(caller, "read", namespace);
        }
    }

    public void requireWrite(Caller caller, String namespace) {
        if (!caller.mayWrite(namespace) || !ownedBy(caller, namespace)) {
            throw denied(caller, "write", namespace);
        }
    }

    /** Whether the caller may see the namespace at all (for listings). */
    public boolean visible(Caller caller, String namespace) {
        return caller.mayRead(namespace) && ownedBy(caller, namespace);
    }

    /** A lease holds blocks of one namespace; only who may read that namespace may see or release it. */
    public void requireLeaseAccess(Caller caller, Lease lease) {
        for (BlockKey key : lease.blocks()) {
            requireRead(caller, key.namespace());
        }
    }

    public void requireOneSided(Caller caller) {
        if (!caller.oneSided()) {
            throw new ForbiddenException("token " + caller.tokenId() + " of tenant '" + caller.tenant()
                    + "' does not grant the one-sided data plane (oneSided: true), whose region key opens all of DRAM");
        }
    }

    private boolean ownedBy(Caller caller, String namespace) {
        String owner = namespaces.owner(namespace);
        return owner == null || owner.equals(caller.tenant());
    }

    private static ForbiddenException denied(Caller caller, String what, String namespace) {
        return new ForbiddenException("token " + caller.tokenId() + " of tenant '" + caller.tenant() + "' may not "
                + what + " namespace '" + namespace + "'");
    }
}
