package io.kvstore.service.namespace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.service.error.ConflictException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/**
 * A namespace's delete and the writes into it ({@link NamespaceRegistry#beginDelete}, {@link
 * NamespaceRegistry#beginWrite}): the delete refuses new writes and waits out those in progress; a refused delete
 * lets writes in again; a write of an earlier declaration of the name is refused in the next one.
 */
class NamespaceDeleteWaitsForWritesTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static final String DECLARATION = """
            {"model":"m","layout":{"layers":1,"kvHeads":1,"headDim":64,"dtype":"float16","blockSize":16},
             "hashScheme":"sha256_cbor","hashSeed":"0"}""";

    @TempDir
    Path dir;

    private NamespaceRegistry registry() {
        return new NamespaceRegistry(dir, JSON, 1 << 20, "kvstore.tiers.dram.slab-size");
    }

    private static NamespaceSpec spec() {
        return JSON.readValue(DECLARATION, NamespaceDeclaration.class).toSpec();
    }

    @Test
    void aDeleteWaitsForAWriteInProgressAndRefusesNewOnes() throws Exception {
        NamespaceRegistry registry = registry();
        NamespaceSpec spec = spec();
        registry.declare("ns", spec, "alpha");
        NamespaceRegistry.Write inProgress = registry.beginWrite("ns", spec);
        assertThat(inProgress).isNotNull();

        CompletableFuture<Void> deleted = CompletableFuture.runAsync(() -> {
            try (var deletion = registry.beginDelete("ns", Duration.ofSeconds(30))) {
                deletion.remove();
            }
        });
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        NamespaceRegistry.Write late;
        // once the delete closed the namespace to writes, none begins; it has not gone on without the one in progress
        while ((late = registry.beginWrite("ns", spec)) != null) {
            late.close();
            assertThat(System.nanoTime()).as("the delete refuses new writes").isLessThan(until);
            Thread.sleep(1);
        }
        Thread.sleep(100);
        assertThat(deleted).as("the delete waits for the write in progress").isNotDone();
        assertThat(registry.declared("ns")).isSameAs(spec);

        inProgress.close();
        deleted.get(10, TimeUnit.SECONDS);
        assertThat(registry.declared("ns")).isNull();
        assertThat(registry.beginWrite("ns", spec)).isNull();
    }

    @Test
    void aDeleteThatWaitedInVainOrWasRefusedLetsWritesInAgain() {
        NamespaceRegistry registry = registry();
        NamespaceSpec spec = spec();
        registry.declare("ns", spec, "alpha");
        NamespaceRegistry.Write inProgress = registry.beginWrite("ns", spec);
        assertThat(inProgress).isNotNull();

        assertThatThrownBy(() -> registry.beginDelete("ns", Duration.ofMillis(50)))
                .isInstanceOf(ConflictException.class)
                .hasMessageContaining("still in progress");
        inProgress.close();
        try (var deletion = registry.beginDelete("ns", Duration.ofSeconds(1))) {
            assertThatThrownBy(() -> registry.beginDelete("ns", Duration.ofSeconds(1)))
                    .as("a second delete while one is under way")
                    .isInstanceOf(ConflictException.class);
            assertThat(registry.beginWrite("ns", spec)).isNull();
            // the delete refused (pinned blocks, say): closed without removing
        }
        NamespaceRegistry.Write again = registry.beginWrite("ns", spec);
        assertThat(again).as("a write after a refused delete").isNotNull();
        again.close();
    }

    @Test
    void aWriteOfAnEarlierDeclarationIsRefusedInTheNextOne() {
        NamespaceRegistry registry = registry();
        NamespaceSpec first = spec();
        registry.declare("ns", first, "alpha");
        try (var deletion = registry.beginDelete("ns", Duration.ofSeconds(1))) {
            deletion.remove();
        }
        NamespaceSpec second = spec();
        registry.declare("ns", second, "beta");

        assertThat(registry.beginWrite("ns", first))
                .as("a write admitted under alpha's declaration")
                .isNull();
        NamespaceRegistry.Write write = registry.beginWrite("ns", second);
        assertThat(write).isNotNull();
        write.close();
    }
}
