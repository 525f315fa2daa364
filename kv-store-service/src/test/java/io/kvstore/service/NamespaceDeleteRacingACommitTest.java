package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.ArgumentMatchers.anyString;
import static org.mockito.Mockito.doAnswer;

import io.kvstore.block.BlockHash;
import io.kvstore.service.quota.ReservationLedger;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.bean.override.mockito.MockitoSpyBean;

/**
 * A namespace delete racing a commit in its namespace: the delete waits for the commit under way, and the
 * reservation that commit ends no longer counts as open once it waited, so the delete is not refused for it.
 *
 * <p>The ledger is spied on only to hold the commit at the moment it forgets its reservation, the one instant in
 * which a delete that found the commit over would still see the reservation open.
 */
@SpringBootTest(
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
            "kvstore.local.enabled=true",
            "kvstore.tiers.dram.capacity=2MB",
            "kvstore.tiers.dram.slab-size=256KB",
            "kvstore.tiers.nvme.enabled=false"
        })
class NamespaceDeleteRacingACommitTest {

    @LocalServerPort
    int port;

    @MockitoSpyBean
    ReservationLedger ledger;

    @Test
    void aDeleteThatWaitedForACommitIsNotRefusedForTheReservationItCommitted() throws Exception {
        Http http = new Http(port);
        var declared = http.json("PUT", "/v1/namespaces/racing", TestLayout.declaration("m"));
        assertThat(declared.statusCode()).as(declared.body()).isIn(200, 201);
        BlockHash h = TestLayout.hashes(TestLayout.tokens(16, 7)).getFirst();
        var reserved = http.json(
                "POST", "/v1/local/namespaces/racing/blocks:reserve", "{\"blocks\":[{\"hash\":\"" + h.hex() + "\"}]}");
        assertThat(reserved.statusCode()).as(reserved.body()).isEqualTo(200);
        String id = TenantApiTest.field(reserved.body(), "reservationId");

        CountDownLatch forgetting = new CountDownLatch(1);
        CountDownLatch deleted = new CountDownLatch(1);
        doAnswer(call -> {
                    if (id.equals(call.getArgument(0))) {
                        forgetting.countDown();
                        // long enough for the delete to be answered when it does not wait for this commit
                        deleted.await(2, TimeUnit.SECONDS);
                    }
                    return call.callRealMethod();
                })
                .when(ledger)
                .done(anyString());
        CompletableFuture<HttpResponse<String>> commit = CompletableFuture.supplyAsync(() -> {
            try {
                return http.json(
                        "POST", "/v1/local/namespaces/racing/blocks:commit", "{\"reservationId\":\"" + id + "\"}");
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(forgetting.await(10, TimeUnit.SECONDS))
                .as("the commit reached its reservation's end")
                .isTrue();

        var delete = http.send("DELETE", "/v1/namespaces/racing", null, null);
        deleted.countDown();

        assertThat(commit.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
        assertThat(delete.statusCode())
                .as("a delete racing a commit that went through: " + delete.body())
                .isIn(200, 204);
        assertThat(http.get("/v1/namespaces/racing").statusCode()).isEqualTo(404);
    }
}
