package io.kvstore.service.error;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.BlockHeldException;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.tier.TierFullException;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.EOFException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.http.ProblemDetail;
import org.springframework.mock.web.MockHttpServletResponse;

/**
 * {@link ProblemAdvice#describe}, the problem the local control socket answers a failure with: the same
 * status, title and field as the HTTP handler Spring MVC picks for it, unexpected failures as a 500
 * without their message.
 */
class ProblemAdviceTest {

    private final TierEngine engine = new TierEngine(
            List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 4L * 4096, 4096)),
            Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.95, 0.9, false)),
            Duration.ofSeconds(30),
            EngineEvents.NONE,
            Clock.systemUTC());
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final ProblemAdvice advice = new ProblemAdvice(new EngineMetrics(registry), engine);

    @AfterEach
    void close() {
        engine.close();
    }

    @Test
    void eachFailureIsDescribedAsItsHttpHandlerAnswersIt() {
        ProblemDetail invalid = advice.describe(new InvalidRequestException("blockHashes[3]", "not hex"));
        assertThat(invalid.getStatus()).isEqualTo(400);
        assertThat(invalid.getTitle()).isEqualTo("Invalid request");
        assertThat(invalid.getDetail()).isEqualTo("not hex");
        assertThat(invalid.getProperties()).containsEntry("field", "blockHashes[3]");

        assertThat(advice.describe(new UnauthorizedException("no token")).getStatus())
                .isEqualTo(401);
        assertThat(advice.describe(new ForbiddenException("tenant b")).getStatus())
                .isEqualTo(403);
        assertThat(advice.describe(new NotFoundException("no such lease")).getStatus())
                .isEqualTo(404);
        ProblemDetail held = advice.describe(new BlockHeldException("block is leased"));
        assertThat(held.getStatus()).isEqualTo(409);
        assertThat(held.getDetail()).isEqualTo("block is leased");
        assertThat(advice.describe(new PayloadTooLargeException("frame of 2 GiB"))
                        .getStatus())
                .isEqualTo(413);
        assertThat(advice.describe(new TooManyRequestsException("slow down")).getStatus())
                .isEqualTo(429);
        assertThat(advice.describe(new QuotaExceededException("tenant a is full"))
                        .getStatus())
                .isEqualTo(507);
        assertThat(advice.describe(new TierFullException("DRAM is full")).getStatus())
                .isEqualTo(507);
    }

    @Test
    void anUnexpectedFailureIsA500ThatKeepsItsMessageInTheLogOnly() {
        ProblemDetail problem = advice.describe(new IllegalStateException("secret internals"));
        assertThat(problem.getStatus()).isEqualTo(500);
        assertThat(problem.getTitle()).isEqualTo("Internal error");
        assertThat(problem.getDetail()).contains("IllegalStateException").doesNotContain("secret internals");
        // its HTTP handler writes to the servlet response, which a control socket does not have
        assertThat(advice.describe(new ClientGoneException("peer closed", new java.io.IOException("broken pipe")))
                        .getStatus())
                .isEqualTo(500);
    }

    /** What {@link ProblemAdvice} logged while {@code calls} ran. */
    private static List<ILoggingEvent> linesLoggedBy(Runnable calls) {
        Logger logger = (Logger) LoggerFactory.getLogger(ProblemAdvice.class);
        ListAppender<ILoggingEvent> lines = new ListAppender<>();
        lines.start();
        logger.addAppender(lines);
        try {
            calls.run();
        } finally {
            logger.detachAppender(lines);
        }
        return lines.list;
    }

    @Test
    void requestsMeetingTheEngineClosedByShutdownAre503ShuttingDownAndLoggedOnce() {
        engine.close(); // the service shutting down while requests still run
        List<ProblemDetail> answers = new ArrayList<>();
        List<ILoggingEvent> lines = linesLoggedBy(() -> {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment block = arena.allocate(4096);
                for (int i = 0; i < 300; i++) {
                    BlockKey key = new BlockKey("ns", BlockHash.ofLong(i));
                    try {
                        engine.put(key, null, block);
                        throw new AssertionError("a put into a closed engine was stored");
                    } catch (Exception e) {
                        answers.add(advice.describe(e));
                    }
                }
            }
        });
        assertThat(answers).hasSize(300).allSatisfy(problem -> {
            assertThat(problem.getStatus()).isEqualTo(503);
            assertThat(problem.getType()).hasToString("urn:kvstore:problem:shutting-down");
            assertThat(problem.getTitle()).isEqualTo("Shutting down");
            assertThat(problem.getDetail()).contains("DRAM tier closed");
        });
        assertThat(lines)
                .as("one line per %s, not a stack trace per request", ProblemAdvice.CLIENT_ERROR_LOG_INTERVAL)
                .singleElement()
                .satisfies(line -> assertThat(line.getThrowableProxy()).isNull())
                .extracting(ILoggingEvent::getFormattedMessage, InstanceOfAssertFactories.STRING)
                .isEqualTo("answered 503, shutting down: DRAM tier closed");
    }

    @Test
    void aViewOfTierMemoryClosedUnderARequestByShutdownIs503ShuttingDownNotAFault() {
        MemorySegment view; // what a zero-copy send or an in-place fill holds of a tier's memory
        try (Arena tierMemory = Arena.ofShared()) {
            view = tierMemory.allocate(4096);
        }
        IllegalStateException closedUnderIt = catchThrowableOfType(
                IllegalStateException.class, () -> view.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0));

        assertThat(advice.describe(closedUnderIt).getStatus())
                .as("the same failure while the engine runs is a fault")
                .isEqualTo(500);
        engine.close();
        ProblemDetail problem = advice.describe(closedUnderIt);
        assertThat(problem.getStatus()).isEqualTo(503);
        assertThat(problem.getType()).hasToString("urn:kvstore:problem:shutting-down");
        assertThat(problem.getDetail()).contains("Already closed");
    }

    @Test
    void hundredsOfClientsLeavingMidRequestAreCountedAndLoggedOnce() {
        List<ILoggingEvent> lines = linesLoggedBy(() -> {
            for (int i = 0; i < 300; i++) {
                advice.clientGone(
                        new ClientGoneException("the client closed the upload at frame " + i, new EOFException()),
                        new MockHttpServletResponse());
            }
        });
        assertThat(registry.get("kvstore.client.disconnects").counter().count()).isEqualTo(300);
        assertThat(lines)
                .as("one line per %s, not one per client", ProblemAdvice.CLIENT_ERROR_LOG_INTERVAL)
                .singleElement()
                .extracting(ILoggingEvent::getFormattedMessage, InstanceOfAssertFactories.STRING)
                .startsWith("the client closed the upload at frame 0 (java.io.EOFException)");
    }

    @Test
    void hundredsOfStalledUploadsAreEachAnswered408AndLoggedOnce() {
        List<ILoggingEvent> lines = linesLoggedBy(() -> {
            for (int i = 0; i < 300; i++) {
                var answer = advice.timeout(new RequestTimeoutException("upload " + i + " stalled"));
                assertThat(answer.getStatusCode().value()).isEqualTo(408);
                assertThat(answer.getHeaders().getFirst("Connection")).isEqualTo("close");
            }
        });
        assertThat(lines)
                .as("one line per %s, not one per request", ProblemAdvice.CLIENT_ERROR_LOG_INTERVAL)
                .singleElement()
                .extracting(ILoggingEvent::getFormattedMessage)
                .isEqualTo("answered 408: upload 0 stalled");
    }
}
