package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.MergedContextConfiguration;

/** What {@link FreshDataDirs} promises every Spring test context. */
class FreshDataDirsTest {

    static final String DATA_DIR = "kvstore.data-dir";

    @Test
    void eachContextGetsANewEmptyDirectoryOverTheApplicationDefault() {
        Path first = Path.of(dataDirOf(withApplicationDefault()));
        Path second = Path.of(dataDirOf(withApplicationDefault()));

        assertThat(first).isNotEqualTo(second).isNotEqualTo(Path.of("./data"));
        assertThat(first).isEmptyDirectory();
        assertThat(second).isEmptyDirectory();
    }

    @Test
    void aTestsOwnDataDirWins() {
        GenericApplicationContext context = withApplicationDefault();
        context.getEnvironment()
                .getPropertySources()
                .addFirst(new MapPropertySource("Inlined Test Properties", Map.of(DATA_DIR, "/srv/mine")));

        assertThat(dataDirOf(context)).isEqualTo("/srv/mine");
    }

    @Test
    void customizersForDifferentTestClassesAreEqualSoContextsAreStillShared() {
        ContextCustomizer a = customizer(LimitsTest.class);
        ContextCustomizer b = customizer(TenantApiTest.class);

        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
    }

    static GenericApplicationContext withApplicationDefault() {
        var context = new GenericApplicationContext();
        context.getEnvironment()
                .getPropertySources()
                .addLast(new MapPropertySource("application.yaml", Map.of(DATA_DIR, "./data")));
        return context;
    }

    static String dataDirOf(GenericApplicationContext context) {
        customizer(FreshDataDirsTest.class)
                .customizeContext(
                        context, new MergedContextConfiguration(FreshDataDirsTest.class, null, null, null, null));
        return context.getEnvironment().getRequiredProperty(DATA_DIR);
    }

    static ContextCustomizer customizer(Class<?> testClass) {
        return new FreshDataDirs().createContextCustomizer(testClass, List.of());
    }
}
