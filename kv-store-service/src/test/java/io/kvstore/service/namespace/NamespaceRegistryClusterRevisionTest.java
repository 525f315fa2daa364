package io.kvstore.service.namespace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.service.config.DurableFiles;
import io.kvstore.service.error.InsufficientStorageException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
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

    /**
     * Upgrade, roll back, roll forward: the new release applied {@code ns} from the cluster at create revision 42;
     * rolled back, the previous release deleted {@code ns} and declared it anew through its API (etcd created it
     * again, at a later revision, and blocks were stored in it), rewriting {@code namespaces.json} as its registry
     * does and leaving {@code namespace-revisions.json} as it was. The declaration is the same to the byte; only
     * the file was written since. Taking 42 for it would make the next sync drop the new declaration's blocks.
     */
    @Test
    void aRevisionIsNotTakenForADeclarationThePreviousReleaseMadeAnewAfterARollback() throws Exception {
        NamespaceRegistry registry = registry();
        registry.declare("ns", spec(), "alpha");
        registry.recordClusterRevision("ns", 42);
        Path declarations = dir.resolve("namespaces.json");
        byte[] withNs = Files.readAllBytes(declarations);
        byte[] revisions = Files.readAllBytes(dir.resolve("namespace-revisions.json"));

        // the previous release starts (a rollback takes a restart: its writes come later than the last one above)
        Thread.sleep(1100);
        DurableFiles.replace(declarations, "{ }".getBytes(StandardCharsets.UTF_8)); // DELETE /v1/namespaces/ns
        DurableFiles.replace(declarations, withNs); // PUT /v1/namespaces/ns, the same declaration

        assertThat(Files.readAllBytes(dir.resolve("namespace-revisions.json"))).isEqualTo(revisions);
        NamespaceRegistry rolledForward = registry();
        assertThat(rolledForward.declared("ns")).isEqualTo(spec());
        assertThat(rolledForward.clusterRevision("ns"))
                .as("the revision of the declaration the previous release deleted")
                .isNull();
        rolledForward.recordClusterRevision("ns", 57); // etcd's, at the next sync
        assertThat(registry().clusterRevision("ns")).as("after another restart").isEqualTo(57L);
    }

    /**
     * A revision stays trusted across restarts while nothing else wrote {@code namespaces.json}: this release's own
     * declarations and removals of other namespaces keep it.
     */
    @Test
    void aRevisionSurvivesDeclarationsAndRemovalsOfOtherNamespaces() {
        NamespaceRegistry registry = registry();
        registry.declare("ns", spec(), "alpha");
        registry.recordClusterRevision("ns", 42);
        registry.declare("other", spec(), "alpha");
        registry.declare("third", spec(), "alpha");
        registry.remove("third");

        assertThat(registry().clusterRevision("ns")).as("after a restart").isEqualTo(42L);
    }

    /** A revisions file as the release before the stamp wrote it: it may be the one a rollback left, so not used. */
    @Test
    void revisionsWithoutAStampAreNotUsed() throws Exception {
        registry().declare("ns", spec(), "alpha");
        Files.writeString(dir.resolve("namespace-revisions.json"), "{\"ns\":42}");

        assertThat(registry().clusterRevision("ns")).isNull();
    }
}
