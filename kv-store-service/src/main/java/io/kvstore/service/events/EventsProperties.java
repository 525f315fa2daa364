package io.kvstore.service.events;

import jakarta.validation.Valid;
import jakarta.validation.constraints.AssertTrue;
import jakarta.validation.constraints.Max;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotNull;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code kvstore.events.*}: the KV event publisher that tells KV-aware routers (Dynamo, llm-d) which blocks
 * each tier holds, in vLLM's event format. Off by default. Reference: {@code docs/events.md}.
 *
 * @param enabled publish events at all
 * @param endpoint ZMQ PUB address; with {@code *}, {@code ::}, {@code ipc://} or {@code inproc://} it is bound,
 *     otherwise connected (vLLM's rule); {@code tcp://*:5557} is vLLM's default
 * @param replayEndpoint ZMQ ROUTER address that answers replay requests, always bound; empty: no replay
 * @param topic topic of every message; {@code {namespace}}, {@code {model}} (the namespace's declared model,
 *     else its name) and {@code {host}} are replaced; the default is llm-d's {@code kv@<pod>@<model>}
 * @param replaySize batches kept for replay
 * @param queueSize block changes waiting to be published; beyond it changes are dropped, counted, and
 *     subscribers are told {@code AllBlocksCleared}; also the most live stores a re-announcement holds back
 *     until their parent goes out, past which it starts over the same way
 * @param batchInterval how long changes gather before a batch is published
 * @param maxBatchEvents most events in one batch
 * @param hwm ZMQ high-water mark of the PUB socket: messages per subscriber queued before ZMQ drops them
 * @param encoding {@code array} (events as tagged arrays: vLLM before #42892, llm-d, Dynamo) or {@code map}
 *     (events as tagged maps: vLLM main since 2026-06, Dynamo)
 * @param dataParallelRank the {@code data_parallel_rank} of every batch
 * @param medium the {@code medium} string of each tier
 */
@Validated
@ConfigurationProperties("kvstore.events")
public record EventsProperties(
        @DefaultValue("false") boolean enabled,
        @NotBlank @DefaultValue("tcp://*:5557") String endpoint,
        @NotNull @DefaultValue("tcp://*:5558") String replayEndpoint,
        @NotNull @DefaultValue("kv@{host}@{model}") String topic,
        @Min(1) @Max(1_000_000) @DefaultValue("1000") int replaySize,
        @Min(16) @Max(10_000_000) @DefaultValue("100000") int queueSize,
        @NotNull @DefaultValue("5ms") Duration batchInterval,
        @Min(1) @Max(65_536) @DefaultValue("512") int maxBatchEvents,
        @Min(1) @DefaultValue("100000") int hwm,
        @NotNull @DefaultValue("array") EventEncoding encoding,
        @Min(0) @DefaultValue("0") int dataParallelRank,
        @Valid @NotNull @DefaultValue Medium medium) {

    @AssertTrue(message = "kvstore.events.batch-interval must be between 1 ms and 1 s")
    public boolean isBatchIntervalInRange() {
        return batchInterval == null
                || (batchInterval.compareTo(Duration.ofMillis(1)) >= 0
                        && batchInterval.compareTo(Duration.ofSeconds(1)) <= 0);
    }

    /**
     * The {@code medium} each tier's events carry. Dynamo maps {@code GPU} to its device tier, {@code CPU} to
     * host-pinned, {@code DISK} (and {@code STORAGE}, vLLM's own name) to disk; llm-d lower-cases it into the
     * device-tier name its scorer weights.
     */
    public record Medium(
            @NotBlank @DefaultValue("GPU") String hbm,
            @NotBlank @DefaultValue("CPU") String dram,
            @NotBlank @DefaultValue("DISK") String nvme) {}
}
