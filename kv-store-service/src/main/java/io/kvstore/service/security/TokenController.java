package io.kvstore.service.security;

import java.util.List;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code /admin/tokens} (a token with the admin role): issue and revoke engine API tokens without a restart. An issued
 * token is shown once; only its digest is kept.
 */
@RestController
@RequestMapping("/admin/tokens")
public class TokenController {

    private final TokenStore tokens;

    public TokenController(TokenStore tokens) {
        this.tokens = tokens;
    }

    /** {@code POST /admin/tokens}: the tenant, namespaces ({@code name} or {@code prefix*}) to read and write. */
    public record IssueRequest(String tenant, List<String> read, List<String> write, Boolean oneSided, Boolean admin) {}

    /** A token as listed: never its secret. */
    public record TokenView(
            String id,
            String tenant,
            List<String> read,
            List<String> write,
            boolean oneSided,
            boolean admin,
            boolean configured) {
        static TokenView of(ApiToken t) {
            return new TokenView(t.id(), t.tenant(), t.read(), t.write(), t.oneSided(), t.admin(), t.configured());
        }
    }

    /** The answer to an issue: {@code token} is the bearer secret, shown only here. */
    public record IssuedView(
            String id,
            String tenant,
            String token,
            List<String> read,
            List<String> write,
            boolean oneSided,
            boolean admin) {}

    public record Tokens(List<TokenView> tokens) {}

    @GetMapping
    public Tokens list() {
        return new Tokens(tokens.all().stream().map(TokenView::of).toList());
    }

    @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
    public ResponseEntity<IssuedView> issue(@RequestBody IssueRequest request) {
        var issued = tokens.issue(
                request.tenant(),
                request.read() == null ? List.of() : request.read(),
                request.write() == null ? List.of() : request.write(),
                Boolean.TRUE.equals(request.oneSided()),
                Boolean.TRUE.equals(request.admin()));
        ApiToken t = issued.token();
        return ResponseEntity.status(HttpStatus.CREATED)
                .body(new IssuedView(
                        t.id(), t.tenant(), issued.secret(), t.read(), t.write(), t.oneSided(), t.admin()));
    }

    @DeleteMapping("/{id}")
    public ResponseEntity<Void> revoke(@PathVariable("id") String id) {
        tokens.revoke(id);
        return ResponseEntity.noContent().build();
    }
}
