package io.kvstore.service.security;

import java.util.List;

/**
 * One engine API token as kept: its SHA-256 (never the token itself, once issued), the tenant it acts for
 * and what it may touch. Persisted in {@code tokens.json} when issued through {@code POST /admin/tokens};
 * tokens of {@code kvstore.tokens} live in configuration only.
 *
 * @param sha256 hex SHA-256 of the token's UTF-8 bytes
 * @param configured whether it comes from {@code kvstore.tokens} (then it cannot be revoked at run time)
 */
public record ApiToken(
        String id,
        String tenant,
        String sha256,
        List<String> read,
        List<String> write,
        boolean oneSided,
        boolean configured) {

    public ApiToken {
        read = read == null ? List.of() : List.copyOf(read);
        write = write == null ? List.of() : List.copyOf(write);
    }

    Caller caller() {
        return new Caller(tenant, id, read, write, oneSided);
    }
}
