package io.kvstore.service.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.block.BlockHash;
import io.kvstore.engine.BlockInfo;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.namespace.NamespaceRegistry;
import io.kvstore.service.security.Caller;
import io.kvstore.service.security.TenantGuard;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import org.jspecify.annotations.Nullable;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /v1/namespaces/{ns}/blocks}: the hashes of the blocks a namespace holds in any tier, in hex
 * order, a page at a time ({@code after} the last hash of the previous page). For clients whose interface
 * must enumerate what the store holds (LMCache's {@code RemoteConnector.list}); this node's blocks only.
 */
@RestController
@RequestMapping("/v1")
public class BlockListController {

    static final int MAX_LIMIT = 10_000;

    private final TierEngine engine;
    private final NamespaceRegistry namespaces;
    private final TenantGuard guard;

    public BlockListController(TierEngine engine, NamespaceRegistry namespaces, TenantGuard guard) {
        this.engine = engine;
        this.namespaces = namespaces;
        this.guard = guard;
    }

    /** @param next the {@code after} of the next page; absent on the last page */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record BlockList(
            List<String> blockHashes, @Nullable String next) {}

    @GetMapping("/namespaces/{ns}/blocks")
    public BlockList list(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @RequestParam(name = "after", required = false) @Nullable String after,
            @RequestParam(name = "limit", required = false, defaultValue = "1000") int limit) {
        guard.requireRead(caller, ns);
        namespaces.require(ns);
        if (limit < 1 || limit > MAX_LIMIT) {
            throw new InvalidRequestException("limit", "limit must be 1 to " + MAX_LIMIT + ", got " + limit);
        }
        String from = null;
        if (after != null) {
            try {
                from = BlockHash.ofHex(after).hex();
            } catch (IllegalArgumentException e) {
                throw new InvalidRequestException("after", "after: " + e.getMessage());
            }
        }
        List<String> hashes = new ArrayList<>();
        for (Iterator<BlockInfo> it = engine.blocks(); it.hasNext(); ) {
            BlockInfo b = it.next();
            if (b.key().namespace().equals(ns) && b.resident()) {
                String hex = b.key().hash().hex().toLowerCase(Locale.ROOT);
                if (from == null || hex.compareTo(from) > 0) {
                    hashes.add(hex);
                }
            }
        }
        hashes.sort(null);
        if (hashes.size() <= limit) {
            return new BlockList(hashes, null);
        }
        List<String> page = List.copyOf(hashes.subList(0, limit));
        return new BlockList(page, page.getLast());
    }
}
