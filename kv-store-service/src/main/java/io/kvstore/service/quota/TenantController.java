package io.kvstore.service.quota;

import io.kvstore.block.TierId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code GET /admin/tenants} (admin role): each tenant's bytes per tier against its quotas, and its bytes
 * in uncommitted reservations against its reserved quota.
 */
@RestController
@RequestMapping("/admin/tenants")
public class TenantController {

    private final TenantUsage usage;
    private final ReservationLedger ledger;

    public TenantController(TenantUsage usage, ReservationLedger ledger) {
        this.usage = usage;
        this.ledger = ledger;
    }

    /** One tenant: per tier its bytes and quota (null: unlimited), and its reservations. */
    public record TenantView(
            String tenant, Map<TierId, TenantUsage.TierUse> tiers, long reserved, long reservedQuota) {}

    public record Tenants(List<TenantView> tenants) {}

    @GetMapping
    public Tenants list() {
        List<TenantView> out = new ArrayList<>();
        for (TenantUsage.View v : usage.views()) {
            out.add(new TenantView(
                    v.tenant(), v.tiers(), ledger.reservedBy(v.tenant()), ledger.bytesPerTenant(v.tenant())));
        }
        return new Tenants(out);
    }
}
