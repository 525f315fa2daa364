package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.Mockito.doAnswer;

import io.kvstore.block.BlockHash;
import io.kvstore.engine.TierEngine;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.bean.override.mockito.MockitoSpyBean;

/**
 * Two declarations of an undeclared name at once: a fresh declaration drops the blocks left under the name before
 * it records itself, and that drop and the record are one step, so a block stored through the other declaration
 * in between is not dropped with the leftovers.
 *
 * <p>The engine is spied on only to run the other declaration and its store inside the first one's drop of the
 * leftovers, the one instant in which they could slip between that drop and the record.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.enabled=false"
        })
class NamespaceDeclaredTwiceAtOnceTest {

    @LocalServerPort
    int port;

    @MockitoSpyBean
    TierEngine engine;

    @Test
    void aBlockStoredThroughTheOtherDeclarationIsNotDroppedAsALeftover() throws Exception {
        Http http = new Http(port);
        List<BlockHash> hashes = TestLayout.hashes(TestLayout.tokens(1, 3));
        byte[] frames = Http.frames(hashes, TestLayout.blocks(1, 3), null);
        AtomicBoolean first = new AtomicBoolean(true);
        CompletableFuture<HttpResponse<String>> otherStore = new CompletableFuture<>();
        doAnswer(call -> {
                    if ("twice".equals(call.getArgument(0)) && first.getAndSet(false)) {
                        // the other declaration and its store, while this one drops the name's leftovers; given
                        // a second to finish (they cannot, until this declaration is recorded, once that is one step)
                        CompletableFuture.runAsync(() -> {
                            try {
                                var declared = http.json("PUT", "/v1/namespaces/twice", TestLayout.declaration("m"));
                                assertThat(declared.statusCode())
                                        .as(declared.body())
                                        .isIn(200, 201);
                                otherStore.complete(http.putBytes(
                                        "/v1/namespaces/twice/blocks", "application/octet-stream", frames));
                            } catch (Throwable e) {
                                otherStore.completeExceptionally(e);
                            }
                        });
                        try {
                            otherStore.get(1, TimeUnit.SECONDS);
                        } catch (TimeoutException stillWaiting) {
                            // as it should: the store lands after this declaration is recorded
                        }
                    }
                    return call.callRealMethod();
                })
                .when(engine)
                .deleteNamespace(anyString());

        var declared = http.json("PUT", "/v1/namespaces/twice", TestLayout.declaration("m"));
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        var stored = otherStore.get(10, TimeUnit.SECONDS);
        assertThat(stored.statusCode()).as(stored.body()).isEqualTo(200);

        var lookup = http.json(
                "POST", "/v1/lookup", "{\"namespace\":\"twice\",\"blockHashes\":" + Http.hexList(hashes) + "}");
        assertThat(lookup.statusCode()).as(lookup.body()).isEqualTo(200);
        assertThat(lookup.body())
                .as("the block stored through the other declaration")
                .contains("\"matchedBlocks\":1");
    }
}
