package io.kvstore.service.namespace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.service.error.InsufficientStorageException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The etcd create revision a namespace was applied from survives a restart, and keeping it leaves {@code
 * namespaces.json} readable by the previous release, whose mapper refuses unknown fields (application.yaml:
 * fail-on-unknown-properties), so that a node can be rolled back.
 */
class NamespaceRegistryClusterRevisionTest {

    /** The service's mapper: a field it does not know is an error. */
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private static final String DECLARATION = """
            {"model":"m","layout":{"layers":1,"kvHeads":1,"headDim":64,"dtype":"float16","blockSize":16},
             "hashScheme":"sha256_cbor","hashSeed":"0"}""";

    /** {@code namespaces.json} as the release before the cluster revision reads it. */
    record PreviousDeclaration(
            String model,
            NamespaceDeclaration.Layout layout,
            String hashScheme,
            String hashSeed,
            String durability,
            String tenant,
            String lora,
            List<String> extraKeys) {}

    @TempDir
    Path dir;

    private NamespaceRegistry registry() {
        return new NamespaceRegistry(dir, JSON, 1 << 20, "kvstore.tiers.dram.slab-size");
    }

    private static NamespaceSpec spec() {
        return JSON.readValue(DECLARATION, NamespaceDeclaration.class).toSpec();
    }

    @Test
    void aRecordedRevisionSurvivesARestartAndThePreviousReleaseStillReadsTheDeclarations() {
        NamespaceRegistry registry = registry();
        registry.declare("ns", spec(), "alpha");
        registry.recordClusterRevision("ns", 42);

        assertThat(registry().clusterRevision("ns")).as("after a restart").isEqualTo(42L);
        assertThatCode(() -> JSON.readValue(
                        dir.resolve("namespaces.json").toFile(),
                        new TypeReference<Map<String, PreviousDeclaration>>() {}))
                .as("namespaces.json read by the previous release (rolled back)")
                .doesNotThrowAnyException();
    }

    @Test
    void aNamespaceDeclaredAnewThroughTheApiHasNoRevisionAfterARestart() {
        NamespaceRegistry registry = registry();
        registry.declare("ns", spec(), "alpha");
        registry.recordClusterRevision("ns", 42);
        registry.remove("ns");
        registry.declare("ns", spec(), "alpha");

        assertThat(registry.clusterRevision("ns")).isNull();
        assertThat(registry().clusterRevision("ns")).as("after a restart").isNull();
    }

    /** Makes every later write of {@code file} in {@link #dir} fail, as on a full disk (no temporary file). */
    private void blockWritesOf(String file) throws Exception {
        java.nio.file.Files.createDirectories(dir.resolve(file + ".tmp").resolve("in-the-way"));
    }

    private void unblockWritesOf(String file) throws Exception {
        java.nio.file.Files.delete(dir.resolve(file + ".tmp").resolve("in-the-way"));
        java.nio.file.Files.delete(dir.resolve(file + ".tmp"));
    }

    @Test
    void aRemoveRefusedForAFullDiskLeavesTheNamespaceAndItsRevision() throws Exception {
        NamespaceRegistry registry = registry();
        registry.declare("ns", spec(), "alpha");
        registry.recordClusterRevision("ns", 42);
        blockWritesOf("namespaces.json");

        assertThatThrownBy(() -> registry.remove("ns")).isInstanceOf(InsufficientStorageException.class);

        assertThat(registry.declared("ns")).isEqualTo(spec());
        assertThat(registry.clusterRevision("ns")).isEqualTo(42L);
        assertThat(registry().clusterRevision("ns")).as("after a restart").isEqualTo(42L);
    }

    @Test
    void aRevisionLeftOnDiskByARemoveIsNotTakenForADeclarationAnewThroughTheApi() throws Exception {
        NamespaceRegistry registry = registry();
        registry.declare("ns", spec(), "alpha");
        registry.recordClusterRevision("ns", 42);
        blockWritesOf("namespace-revisions.json");

        assertThat(registry.remove("ns")).isTrue(); // the declaration went; its revision could not
        assertThat(registry.declared("ns")).isNull();
        unblockWritesOf("namespace-revisions.json");
        registry.declare("ns", spec(), "alpha");

        assertThat(registry.clusterRevision("ns")).isNull();
        assertThat(registry().clusterRevision("ns")).as("after a restart").isNull();
    }

    @Test
    void aRevisionLeftOnDiskByARemoveIsNotTakenForADeclarationAnewAfterARestart() throws Exception {
        NamespaceRegistry registry = registry();
        registry.declare("ns", spec(), "alpha");
        registry.recordClusterRevision("ns", 42);
        blockWritesOf("namespace-revisions.json");
        assertThat(registry.remove("ns")).isTrue();
        unblockWritesOf("namespace-revisions.json");

        NamespaceRegistry restarted = registry();
        assertThat(restarted.declared("ns")).isNull();
        restarted.declare("ns", spec(), "alpha");

        assertThat(restarted.clusterRevision("ns")).isNull();
        assertThat(registry().clusterRevision("ns")).as("after another restart").isNull();
    }
}
