package io.kvstore.transfer;

import java.time.Duration;

/** A completed transfer: bytes moved, how many transfers they took after coalescing, and how long. */
public record TransferResult(long bytes, int transfers, Duration elapsed) {}
