package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.service.config.StartupBinding;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;

/** {@code kvstore.cluster.*} binds as the service binds it at start-up. */
class ClusterPropertiesTest {

    /** A complete cluster configuration with {@code nodeName}. */
    private static ClusterProperties bind(String nodeName) {
        Map<String, String> properties = new HashMap<>(Map.of(
                "kvstore.cluster.enabled", "true",
                "kvstore.cluster.endpoints[0]", "http://127.0.0.1:2379",
                "kvstore.cluster.advertised-address", "http://10.0.0.5:8080",
                "kvstore.cluster.node-name", nodeName));
        return StartupBinding.bind("kvstore.cluster", ClusterProperties.class, properties);
    }

    @Test
    void aNodeNameThatCannotTravelInAPeerHeaderIsRefusedAtStartNamingThePropertyAndTheRule() {
        for (String bad : new String[] {"node\r\nX-Injected: 1", "nœud-ä", "node\u0007", "a b", "x".repeat(129)}) {
            assertThatThrownBy(() -> bind(bad))
                    .as(bad)
                    .cause()
                    .isInstanceOf(BindValidationException.class)
                    .hasMessageContaining("kvstore.cluster.node-name must be 1 to 128 letters, digits");
        }
        // an empty or blank name is refused as a missing one
        assertThatThrownBy(() -> bind(" "))
                .cause()
                .isInstanceOf(BindValidationException.class)
                .hasMessageContaining("kvstore.cluster.enabled needs endpoints, node-name and advertised-address");
    }

    @Test
    void hostNamesAddressesAndShortNamesAreValidNodeNames() {
        for (String good : new String[] {"a", "node-1", "kv_store.rack-2", "10.0.0.5:8080", "x".repeat(128)}) {
            assertThat(bind(good).nodeName()).isEqualTo(good);
        }
    }
}
