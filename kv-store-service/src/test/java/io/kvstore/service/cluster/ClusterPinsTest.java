package io.kvstore.service.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.engine.BlockHeldException;
import io.kvstore.engine.EngineEvents;
import io.kvstore.engine.TierEngine;
import io.kvstore.engine.TierSettings;
import io.kvstore.eviction.EvictionPolicyKind;
import io.kvstore.tier.memory.HostMemoryProvider;
import io.kvstore.tier.memory.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** This node's share of the cluster's pins against a real engine, with etcd's snapshots given by hand. */
class ClusterPinsTest {

    private static final int BLOCK = 4096;

    private final Arena arena = Arena.ofShared();
    private TierEngine engine;
    private ClusterPins pins;
    private final BlockKey held = new BlockKey("ns", BlockHash.ofLong(1));

    @BeforeEach
    void start() throws Exception {
        engine = new TierEngine(
                List.of(new MemoryTier(TierId.DRAM, new HostMemoryProvider(), 64L * BLOCK, BLOCK)),
                Map.of(TierId.DRAM, new TierSettings(EvictionPolicyKind.LRU, 0.95, 0.9, false)),
                Duration.ofSeconds(30),
                EngineEvents.NONE,
                Clock.systemUTC());
        MemorySegment bytes = arena.allocate(BLOCK);
        engine.put(held, null, bytes);
        pins = new ClusterPins(engine);
    }

    @AfterEach
    void stop() {
        engine.close();
        arena.close();
    }

    @Test
    void aSnapshotOlderThanAPinDoesNotUnpinIt() {
        assertThat(pins.add(List.of(held), 10)).isEqualTo(1);

        pins.wanted(Set.of(), 9); // the watch lags: etcd at revision 9 had no pin yet

        assertThat(pins.pinnedHere()).isEqualTo(1);
        assertThatThrownBy(() -> engine.delete(held)).isInstanceOf(BlockHeldException.class);
    }

    @Test
    void aSnapshotThatReachedThePinDecidesFromThenOn() {
        pins.add(List.of(held), 10);
        pins.wanted(Set.of(held), 10); // caught up: the pin is there

        pins.wanted(Set.of(), 12); // deleted in etcd since (an unpin through a node that could not tell us)

        assertThat(pins.pinnedHere()).isZero();
        assertThat(engine.delete(held)).isTrue();
    }

    @Test
    void aPinOfUnknownRevisionFollowsTheNextSnapshot() {
        pins.add(List.of(held), 0);

        pins.wanted(Set.of(), 5);

        assertThat(pins.pinnedHere()).isZero();
    }

    @Test
    void anUnpinIsCountedOnceAndALaggingSnapshotWithoutItKeepsItOff() {
        pins.add(List.of(held), 10);

        assertThat(pins.remove(List.of(held))).isEqualTo(1);
        pins.wanted(Set.of(), 9);

        assertThat(pins.pinnedHere()).isZero();
        assertThat(engine.delete(held)).isTrue();
    }
    /**
     * A pin through one node (etcd revision 10), an unpin through another (deleted at 12): this node's watch
     * delivers both before the first node's forwarded pin, which tells the nodes one after another, arrives.
     * That late forward must not pin the block again: etcd has held no pin since revision 12, and no later
     * snapshot would come to undo it (the block would refuse deletion and never be evicted).
     */
    @Test
    void aForwardedPinOlderThanTheLastSnapshotDoesNotOutliveItsUnpin() {
        pins.wanted(Set.of(held), 10); // the watch: the pin, written at 10
        pins.remove(List.of(held)); // the forwarded unpin
        pins.wanted(Set.of(), 12); // the watch: the pin deleted at 12
        assertThat(pins.add(List.of(held), 10)).isZero(); // the forwarded pin of revision 10, late
        pins.pinHeld(); // a renewal
        assertThat(pins.pinnedHere()).isZero();
    }
}
