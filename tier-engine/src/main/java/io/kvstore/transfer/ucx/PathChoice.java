package io.kvstore.transfer.ucx;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The rule that picks a peer's {@link UcxPath}, as pure functions of what the settings want, how the
 * endpoint was opened and which transport UCX put on its {@code rma_bw} lane.
 *
 * <p>With Debian's UCX 1.13, one-sided RMA is fast where the transport does it natively (shared memory:
 * sysv/posix/cma, and RDMA) but emulated and pathologically slow over tcp, while active messages over
 * tcp run near wire speed. UCX 1.13 also drops every shared-memory transport when peer-failure
 * detection ({@code UCP_ERR_HANDLING_MODE_PEER}) is asked for. So the connector first opens an endpoint
 * without it and keeps that endpoint for RMA when its {@code rma_bw} lane is not tcp; otherwise it
 * reconnects with peer-failure detection (a dead peer then fails requests at once) and uses RMA if the
 * new endpoint has a non-tcp {@code rma_bw} lane (RDMA), else active messages. A fixed path skips the
 * question: RMA keeps the first endpoint whatever its lanes, active messages start with peer-failure
 * detection.
 */
final class PathChoice {

    /** What to do with an endpoint whose lanes are known. */
    sealed interface Step permits Use, Reconnect {}

    /** Keep the endpoint and move bytes on {@code path}. */
    record Use(UcxPath path) implements Step {}

    /** Close the endpoint and open one with peer-failure detection, then ask again. */
    record Reconnect() implements Step {}

    private static final Pattern LANE = Pattern.compile("lane\\[\\d+]:\\s+\\d+:(\\w+)/\\S+.*");

    private PathChoice() {}

    /** Whether the first endpoint is opened with peer-failure detection already. */
    static boolean startWithPeerFailureDetection(UcxPath wanted) {
        return wanted == UcxPath.ACTIVE_MESSAGES;
    }

    /**
     * The step after an endpoint opened with or without {@code peerFailureDetection} settled with
     * {@code rmaTransport} on its first {@code rma_bw} lane (null when it has none). Never
     * {@link Reconnect} when {@code peerFailureDetection} is already on.
     */
    static Step next(UcxPath wanted, boolean peerFailureDetection, String rmaTransport) {
        boolean nativeRma = rmaTransport != null && !rmaTransport.equals("tcp");
        return switch (wanted) {
            case RMA -> new Use(UcxPath.RMA);
            case ACTIVE_MESSAGES -> peerFailureDetection ? new Use(UcxPath.ACTIVE_MESSAGES) : new Reconnect();
            case AUTO -> {
                if (nativeRma) {
                    yield new Use(UcxPath.RMA);
                }
                yield peerFailureDetection ? new Use(UcxPath.ACTIVE_MESSAGES) : new Reconnect();
            }
        };
    }

    /**
     * The transport of the first {@code rma_bw} lane in {@code ucp_ep_print_info}'s text, e.g.
     * {@code cma} from {@code lane[2]: 5:cma/memory.0 md[4] -> md[4]/cma/sysdev[255] rma_bw#0}; null when
     * no lane carries {@code rma_bw}.
     */
    static String rmaTransport(String epInfo) {
        for (String line : epInfo.lines().toList()) {
            Matcher m = LANE.matcher(line.replace("#", " ").trim());
            if (m.matches() && line.contains("rma_bw")) {
                return m.group(1);
            }
        }
        return null;
    }
}
