package io.kvstore.service.security;

import java.util.List;

/**
 * One engine API token as kept: its SHA-256 (never the token itself, once issued), the tenant it acts for
 * and what it may touch. Persisted in {@code tokens.json} when issued through {@code POST /admin/tokens};
 * tokens of {@code kvstore.tokens} live in configuration only.
 *
 * @param sha256 hex SHA-256 of the token's UTF-8 bytes
 * @param admin whether it has the admin role (the admin API answers only such tokens)
 * @param configured whether it comes from {@code kvstore.tokens} or {@code kvstore.admin-token} (then it
 *     cannot be revoked at run time)
 */
public record ApiToken(
        String id,
        String tenant,
        String sha256,
        List<String> read,
        List<String> write,
        boolean oneSided,
        Boolean admin,
        boolean configured) {

    public ApiToken {
        read = read == null ? List.of() : List.copyOf(read);
        write = write == null ? List.of() : List.copyOf(write);
        // tokens.json written before the admin role existed has no such field
        admin = admin != null && admin;
    }

    Caller caller() {
        return new Caller(tenant, id, read, write, oneSided, admin);
    }
}
