package io.kvstore.service.api;

import java.util.List;

/** {@code POST /v1/namespaces/{ns}/blocks:fetch}: the hashes (hex) of the blocks to send, in order. */
public record FetchRequest(List<String> blockHashes) {}
