package io.kvstore.service.events;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import io.kvstore.eviction.EvictionPolicyKind;

/**
 * Hands every engine event to two listeners in turn (the metrics, then the KV event publisher), since the
 * engine takes one. {@code EngineEventsTeeTest} fails when {@link EngineEvents} gains a method this class
 * does not pass on.
 */
public record EngineEventsTee(EngineEvents first, EngineEvents second) implements EngineEvents {

    @Override
    public void evicted(TierId tier, EvictionPolicyKind policy, int bytes) {
        first.evicted(tier, policy, bytes);
        second.evicted(tier, policy, bytes);
    }

    @Override
    public void demoted(TierId from, TierId to, int bytes) {
        first.demoted(from, to, bytes);
        second.demoted(from, to, bytes);
    }

    @Override
    public void promoted(TierId from, TierId to, int bytes) {
        first.promoted(from, to, bytes);
        second.promoted(from, to, bytes);
    }

    @Override
    public void checksumFailed(TierId tier, BlockKey key) {
        first.checksumFailed(tier, key);
        second.checksumFailed(tier, key);
    }

    @Override
    public void readFailed(TierId tier, BlockKey key) {
        first.readFailed(tier, key);
        second.readFailed(tier, key);
    }

    @Override
    public void moved(TierId from, TierId to, long bytes, long nanos) {
        first.moved(from, to, bytes, nanos);
        second.moved(from, to, bytes, nanos);
    }

    @Override
    public void demotionFailing(TierId from, TierId to, String reason) {
        first.demotionFailing(from, to, reason);
        second.demotionFailing(from, to, reason);
    }

    @Override
    public void demotionRecovered(TierId from) {
        first.demotionRecovered(from);
        second.demotionRecovered(from);
    }

    @Override
    public void copyAdded(TierId tier, BlockRecord block) {
        first.copyAdded(tier, block);
        second.copyAdded(tier, block);
    }

    @Override
    public void copyRemoved(TierId tier, BlockKey key, int length) {
        first.copyRemoved(tier, key, length);
        second.copyRemoved(tier, key, length);
    }

    @Override
    public void namespaceDeleted(String namespace) {
        first.namespaceDeleted(namespace);
        second.namespaceDeleted(namespace);
    }

    @Override
    public void reservationsExpired(int count) {
        first.reservationsExpired(count);
        second.reservationsExpired(count);
    }
}
