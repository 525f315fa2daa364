package io.kvstore.service.security;

import io.kvstore.service.config.DurableFiles;
import io.kvstore.service.config.KvStoreProperties;
import io.kvstore.service.error.ConflictException;
import io.kvstore.service.error.ForbiddenException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.NotFoundException;
import io.kvstore.service.error.UnauthorizedException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

/**
 * The engine API's bearer tokens: those of {@code kvstore.tokens} plus those issued at run time through
 * the admin API, which are kept (as SHA-256 digests only) in {@code tokens.json} under the data directory
 * and survive restarts. A presented token is hashed and compared with every known digest in constant
 * time, so neither a match's position nor a partial match shows in the response time.
 *
 * <p>The admin API uses the same tokens: a token with the admin role ({@code admin: true}) may call
 * {@code /admin/**}. The older {@code kvstore.admin-token} still works: it becomes the configured token
 * {@code admin-token} of tenant {@code admin} with the admin role and no namespace grants.
 */
public final class TokenStore {

    private static final Logger log = LoggerFactory.getLogger(TokenStore.class);
    private static final Pattern TENANT = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");
    private static final Pattern NAMESPACE_PATTERN = Pattern.compile("\\*|[A-Za-z0-9][A-Za-z0-9._:-]{0,127}\\*?");
    private static final SecureRandom RANDOM = new SecureRandom();
    /** The id of the token {@code kvstore.admin-token} configures. */
    public static final String ADMIN_TOKEN_ID = "admin-token";
    /** The tenant of {@code kvstore.admin-token}. */
    public static final String ADMIN_TENANT = "admin";

    private final Path file;
    private final JsonMapper json;
    private final List<ApiToken> tokens = new CopyOnWriteArrayList<>();
    /** How many tokens were revoked since start: sessions that outlive a HELLO check again when it moves. */
    private volatile int revocations;
    /** Told each revoked token's id, so connections that outlive their credentials can be closed at once. */
    private final List<Consumer<String>> revocationListeners = new CopyOnWriteArrayList<>();

    public TokenStore(KvStoreProperties properties, JsonMapper json) {
        this.file = properties.dataDir().resolve("tokens.json");
        this.json = json;
        int n = 0;
        for (KvStoreProperties.Token t : properties.tokens()) {
            String field = "kvstore.tokens[" + n + "]";
            checkGrant(t.tenant(), t.read(), t.write(), t.admin(), field);
            tokens.add(new ApiToken(
                    "config-" + n, t.tenant(), sha256(t.token()), t.read(), t.write(), t.oneSided(), t.admin(), true));
            n++;
        }
        String legacyAdmin = properties.adminToken();
        if (legacyAdmin != null && !legacyAdmin.isBlank()) {
            tokens.add(new ApiToken(
                    ADMIN_TOKEN_ID, ADMIN_TENANT, sha256(legacyAdmin), List.of(), List.of(), false, true, true));
        }
        if (Files.exists(file)) {
            try {
                tokens.addAll(json.readValue(file.toFile(), new TypeReference<List<ApiToken>>() {}));
            } catch (RuntimeException e) {
                throw new IllegalStateException("cannot read API tokens from " + file + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Whether no token grants any namespace: the engine API then serves loopback clients only (protected
     * mode). Tokens with only the admin role (such as {@code kvstore.admin-token}) do not count.
     */
    public boolean protectedMode() {
        for (ApiToken t : tokens) {
            if (!t.read().isEmpty() || !t.write().isEmpty()) {
                return false;
            }
        }
        return true;
    }

    /** Whether some token has the admin role; without one the admin API refuses every call. */
    public boolean anyAdmin() {
        for (ApiToken t : tokens) {
            if (t.admin()) {
                return true;
            }
        }
        return false;
    }

    /**
     * The caller of a bearer token presented on a same-host channel (the local control socket, whose file
     * only the service's user or group may open): in protected mode every such client is {@link Caller#LOCAL},
     * as loopback HTTP clients are; otherwise 401 without a token, 403 for an unknown one, as over HTTP.
     */
    public Caller localCaller(@Nullable String bearer) {
        if (protectedMode()) {
            return Caller.LOCAL;
        }
        return requireBearer(bearer, "the engine API needs a bearer token");
    }

    /** The caller of a bearer token: 401 without one, 403 when it is no known token. */
    public Caller requireBearer(@Nullable String bearer, String missing) {
        if (bearer == null) {
            throw new UnauthorizedException(missing);
        }
        Caller caller = authenticate(bearer.trim());
        if (caller == null) {
            throw new ForbiddenException("the bearer token is not a valid API token");
        }
        return caller;
    }

    /** The caller a presented token stands for, or null when it matches none (checked against every token). */
    public @Nullable Caller authenticate(String presented) {
        byte[] digest = HexFormat.of().parseHex(sha256(presented));
        ApiToken match = null;
        for (ApiToken t : tokens) {
            if (MessageDigest.isEqual(digest, HexFormat.of().parseHex(t.sha256())) && match == null) {
                match = t;
            }
        }
        return match == null ? null : match.caller();
    }

    /** A token just issued: the secret is shown once and never stored. */
    public record Issued(ApiToken token, String secret) {}

    /** Issues a random token for {@code tenant} and persists its digest before returning it. */
    public synchronized Issued issue(
            String tenant, List<String> read, List<String> write, boolean oneSided, boolean admin) {
        checkGrant(tenant, read, write, admin, "");
        byte[] raw = new byte[32];
        RANDOM.nextBytes(raw);
        String secret = "kvs_" + Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
        byte[] idBytes = new byte[6];
        RANDOM.nextBytes(idBytes);
        ApiToken token = new ApiToken(
                "tok-" + HexFormat.of().formatHex(idBytes),
                tenant,
                sha256(secret),
                read,
                write,
                oneSided,
                admin,
                false);
        tokens.add(token);
        try {
            save();
        } catch (UncheckedIOException e) {
            tokens.remove(token);
            throw e;
        }
        log.info(
                "API token {} issued for tenant {} (read {}, write {}, one-sided {}, admin {})",
                token.id(),
                tenant,
                read,
                write,
                oneSided,
                admin);
        return new Issued(token, secret);
    }

    /**
     * Revokes an issued token; configured ones are refused (they would come back on restart). Once it is refused
     * everywhere, each {@link #onRevocation} listener is told its id.
     */
    public void revoke(String id) {
        remove(id);
        for (Consumer<String> listener : revocationListeners) {
            try {
                listener.accept(id);
            } catch (RuntimeException e) {
                log.warn("API token {} revoked, but a listener failed: {}", id, e.toString());
            }
        }
    }

    /**
     * Has {@code listener} told the id of each token revoked from now on, after the token is refused everywhere
     * ({@link #revocations()} has moved). Called on the revoking thread, outside this store's lock.
     */
    public void onRevocation(Consumer<String> listener) {
        revocationListeners.add(listener);
    }

    private synchronized void remove(String id) {
        ApiToken token = byId(id);
        if (token == null) {
            throw new NotFoundException("API token '" + id + "' is unknown or already revoked");
        }
        if (token.configured()) {
            throw new ConflictException(
                    "API token '" + id + "' comes from kvstore.tokens or kvstore.admin-token; remove it from the "
                            + "configuration and restart");
        }
        tokens.remove(token);
        try {
            save();
        } catch (UncheckedIOException e) {
            tokens.add(token);
            throw e;
        }
        revocations++; // under this object's lock
        log.info("API token {} of tenant {} revoked", id, token.tenant());
    }

    /** Tokens revoked since start; unchanged means every caller authenticated before is still valid. */
    public int revocations() {
        return revocations;
    }

    /** Whether the token with this id is still known (not revoked). */
    public boolean isLive(String tokenId) {
        return byId(tokenId) != null;
    }

    private @Nullable ApiToken byId(String id) {
        for (ApiToken t : tokens) {
            if (t.id().equals(id)) {
                return t;
            }
        }
        return null;
    }

    public List<ApiToken> all() {
        return List.copyOf(tokens);
    }

    private void save() {
        List<ApiToken> issued = new ArrayList<>();
        for (ApiToken t : tokens) {
            if (!t.configured()) {
                issued.add(t);
            }
        }
        try {
            DurableFiles.replace(file, json.writerWithDefaultPrettyPrinter().writeValueAsBytes(issued));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write API tokens to " + file + ": " + e.getMessage(), e);
        }
    }

    private static void checkGrant(String tenant, List<String> read, List<String> write, boolean admin, String prefix) {
        String p = prefix.isEmpty() ? "" : prefix + ".";
        if (tenant == null || !TENANT.matcher(tenant).matches()) {
            throw new InvalidRequestException(
                    p + "tenant", p + "tenant '" + tenant + "' must be 1 to 64 letters, digits, '.', '_' or '-'");
        }
        checkPatterns(read, p + "read");
        checkPatterns(write, p + "write");
        if (!admin && (read == null || read.isEmpty()) && (write == null || write.isEmpty())) {
            throw new InvalidRequestException(
                    p + "read", p + "read or " + p + "write must name at least one namespace (or admin be true)");
        }
    }

    private static void checkPatterns(List<String> patterns, String field) {
        if (patterns == null) {
            return;
        }
        for (int i = 0; i < patterns.size(); i++) {
            String s = patterns.get(i);
            if (s == null || !NAMESPACE_PATTERN.matcher(s).matches()) {
                throw new InvalidRequestException(
                        field + "[" + i + "]",
                        field + "[" + i + "]: '" + s + "' is not a namespace name or 'prefix*' pattern");
            }
        }
    }

    static String sha256(String token) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
