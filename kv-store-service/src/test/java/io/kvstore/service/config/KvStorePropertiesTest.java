package io.kvstore.service.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;

/** {@code kvstore.*} binds as the service binds it at start-up, with each entry of a list or map checked. */
class KvStorePropertiesTest {

    private static KvStoreProperties bind(Map<String, String> properties) {
        return StartupBinding.bind("kvstore", KvStoreProperties.class, properties);
    }

    @Test
    void aTokenShorterThanSixteenCharactersIsRefusedNamingItsEntry() {
        assertThatThrownBy(() -> bind(Map.of(
                        "kvstore.tokens[0].tenant", "team-a",
                        "kvstore.tokens[0].token", "0123456789abcdef",
                        "kvstore.tokens[1].tenant", "team-b",
                        "kvstore.tokens[1].token", "short")))
                .isInstanceOf(BindException.class)
                .cause()
                .isInstanceOf(BindValidationException.class)
                .hasMessageContaining("kvstore.tokens[1].token")
                .hasMessageNotContaining("kvstore.tokens[0].token");
    }

    @Test
    void aTokenWithoutATenantIsRefused() {
        assertThatThrownBy(() -> bind(Map.of("kvstore.tokens[0].token", "0123456789abcdef")))
                .cause()
                .isInstanceOf(BindValidationException.class)
                .hasMessageContaining("kvstore.tokens[0].tenant");
    }

    @Test
    void validTokensAndTenantQuotasBindWithTheirDefaults() {
        KvStoreProperties p = bind(Map.of(
                "kvstore.tokens[0].tenant", "team-a",
                "kvstore.tokens[0].token", "0123456789abcdef",
                "kvstore.tenants.team-a.dram", "1GB"));
        assertThat(p.tokens()).singleElement().satisfies(t -> {
            assertThat(t.tenant()).isEqualTo("team-a");
            assertThat(t.read()).isEmpty();
            assertThat(t.oneSided()).isFalse();
        });
        assertThat(p.tenants().get("team-a").dram().toGigabytes()).isEqualTo(1);
        assertThat(p.leaseTimeout()).hasSeconds(120);
    }

    @Test
    void aNegativeOrZeroLimitIsRefusedNamingItsProperty() {
        for (var bad : Map.of(
                        "kvstore.limits.max-json-body", "-1MB",
                        "kvstore.limits.upload-deadline", "-5s",
                        "kvstore.limits.frame-timeout", "0s",
                        "kvstore.limits.max-reservation-timeout", "-1s",
                        "kvstore.local.control-hello-timeout", "0s")
                .entrySet()) {
            assertThatThrownBy(() -> bind(Map.of(bad.getKey(), bad.getValue())))
                    .as(bad.getKey())
                    .cause()
                    .isInstanceOf(BindValidationException.class)
                    .hasMessageContaining(bad.getKey());
        }
    }

    @Test
    void aNegativeTenantQuotaIsRefusedNamingItsProperty() {
        assertThatThrownBy(() -> bind(Map.of("kvstore.tenants.team-a.dram", "-1GB")))
                .cause()
                .isInstanceOf(BindValidationException.class)
                .hasMessageContaining("kvstore.tenants.team-a");
    }

    @Test
    void theProvidersAConfigMayNameAreTheTierEnginesOwn() {
        assertThat(KvStoreProperties.PROVIDERS)
                .containsExactlyInAnyOrderElementsOf(io.kvstore.tier.memory.MemoryProvider.NAMES);
    }
}
