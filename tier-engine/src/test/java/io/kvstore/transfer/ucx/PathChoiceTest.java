package io.kvstore.transfer.ucx;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.transfer.ucx.PathChoice.Reconnect;
import io.kvstore.transfer.ucx.PathChoice.Step;
import io.kvstore.transfer.ucx.PathChoice.Use;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class PathChoiceTest {

    static Stream<Arguments> steps() {
        Step rma = new Use(UcxPath.RMA);
        Step am = new Use(UcxPath.ACTIVE_MESSAGES);
        Step reconnect = new Reconnect();
        return Stream.of(
                // wanted, peer-failure detection on, rma_bw lane transport, step
                Arguments.of(UcxPath.AUTO, false, "sysv", rma),
                Arguments.of(UcxPath.AUTO, false, "cma", rma),
                Arguments.of(UcxPath.AUTO, false, "posix", rma),
                Arguments.of(UcxPath.AUTO, false, "tcp", reconnect),
                Arguments.of(UcxPath.AUTO, false, null, reconnect),
                Arguments.of(UcxPath.AUTO, true, "rc_mlx5", rma),
                Arguments.of(UcxPath.AUTO, true, "tcp", am),
                Arguments.of(UcxPath.AUTO, true, null, am),
                Arguments.of(UcxPath.RMA, false, "tcp", rma),
                Arguments.of(UcxPath.RMA, false, null, rma),
                Arguments.of(UcxPath.RMA, false, "sysv", rma),
                Arguments.of(UcxPath.RMA, true, "tcp", rma),
                Arguments.of(UcxPath.ACTIVE_MESSAGES, true, "sysv", am),
                Arguments.of(UcxPath.ACTIVE_MESSAGES, true, "tcp", am),
                Arguments.of(UcxPath.ACTIVE_MESSAGES, true, null, am),
                Arguments.of(UcxPath.ACTIVE_MESSAGES, false, "sysv", reconnect));
    }

    @ParameterizedTest(name = "{0}, peer-failure detection {1}, rma_bw on {2} -> {3}")
    @MethodSource("steps")
    void pathFollowsTheWantedPathAndTheRmaLane(UcxPath wanted, boolean peerFailure, String transport, Step step) {
        assertThat(PathChoice.next(wanted, peerFailure, transport)).isEqualTo(step);
    }

    @Test
    void onlyActiveMessagesStartWithPeerFailureDetection() {
        assertThat(PathChoice.startWithPeerFailureDetection(UcxPath.ACTIVE_MESSAGES))
                .isTrue();
        assertThat(PathChoice.startWithPeerFailureDetection(UcxPath.AUTO)).isFalse();
        assertThat(PathChoice.startWithPeerFailureDetection(UcxPath.RMA)).isFalse();
    }

    @Test
    void withPeerFailureDetectionOnTheChoiceIsAlwaysFinal() {
        for (UcxPath wanted : UcxPath.values()) {
            for (String transport : new String[] {null, "tcp", "sysv", "rc_mlx5"}) {
                assertThat(PathChoice.next(wanted, true, transport)).isInstanceOf(Use.class);
            }
        }
    }

    @Test
    void rmaTransportIsTheFirstLaneCarryingRmaBw() {
        String sharedMemory = """
                #
                # UCP endpoint
                #
                #               peer: <no debug data>
                #                 lane[0]:  8:sysv/memory.0 md[5]          -> md[5]/sysv/sysdev[255] am am_bw#0
                #                 lane[1]:  3:cma/memory md[3]             -> md[3]/cma/sysdev[255] rma_bw#0
                #                 lane[2]:  2:posix/memory md[2]           -> md[2]/posix/sysdev[255] rma_bw#1
                """;
        assertThat(PathChoice.rmaTransport(sharedMemory)).isEqualTo("cma");
    }

    @Test
    void tcpLanesAreReportedAsTcp() {
        String tcp = """
                #                 lane[0]:  1:tcp/lo.0 md[1]          -> md[1]/tcp/sysdev[255] am am_bw#0 rma_bw#0
                """;
        assertThat(PathChoice.rmaTransport(tcp)).isEqualTo("tcp");
    }

    @Test
    void anEndpointWithoutRmaBwLaneHasNoRmaTransport() {
        assertThat(PathChoice.rmaTransport("#                 lane[0]:  1:tcp/lo.0 md[1] -> md[1]/tcp am am_bw#0"))
                .isNull();
        assertThat(PathChoice.rmaTransport("")).isNull();
    }
}
