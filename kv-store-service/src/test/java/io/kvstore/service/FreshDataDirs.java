package io.kvstore.service;

import java.util.List;
import java.util.Map;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;

/**
 * Gives every Spring test context a new, empty {@code kvstore.data-dir}, so no test class has to set one.
 *
 * <p>Why: the data directory holds the NVMe tier's block files and its RocksDB index, the namespace declarations
 * and the tokens. Two live contexts on one directory would fail on RocksDB's lock or read each other's state,
 * and the default ({@code ./data}) would leave files in the module. The directory is made in
 * {@link Customizer#customizeContext}, so each context Spring starts gets its own, while the customizer itself
 * is stateless and all instances are equal: it does not split Spring's context cache.
 *
 * <p>The property sits just above the system properties: a test's own {@code kvstore.data-dir} (inlined
 * properties, {@code @TestPropertySource}, {@code @DynamicPropertySource}, arguments) still wins, while
 * {@code application.yaml}'s default does not. Like {@link TempDirs}, it leaves the directory behind at exit.
 * Registered in {@code META-INF/spring.factories}.
 */
final class FreshDataDirs implements ContextCustomizerFactory {

    @Override
    public ContextCustomizer createContextCustomizer(
            Class<?> testClass, List<ContextConfigurationAttributes> configAttributes) {
        return new Customizer();
    }

    /** Adds {@code kvstore.data-dir} = a new temporary directory to the context it customizes. */
    record Customizer() implements ContextCustomizer {

        @Override
        public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration config) {
            var source = new MapPropertySource(
                    "kvstore test data dir",
                    Map.of("kvstore.data-dir", TempDirs.create("kvstore-test").toString()));
            context.getEnvironment()
                    .getPropertySources()
                    .addBefore(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME, source);
        }
    }
}
