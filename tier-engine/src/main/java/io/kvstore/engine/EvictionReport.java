package io.kvstore.engine;

/** What an explicit eviction did: blocks and bytes that left the tier. */
public record EvictionReport(int blocks, long bytes) {}
