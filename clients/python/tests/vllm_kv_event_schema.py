"""vLLM's KV event structs as ``vllm/distributed/kv_events.py`` declares them at ``VLLM_COMMIT`` (read, not
copied): for each tag, its fields in declaration order as ``(name, kind, default)``, ``REQUIRED`` for a field
without a default. One schema for every reader of kvstore's events in the tests: the msgspec decoder stand-in of
``test_kv_events_wire.py`` and the service suite's subscriber (``kv-store-service/src/test/python``), each of which
checks the kinds its own way.
"""

VLLM_COMMIT = "EmbeddedLLM/vllm@8704c8ad8095bc9387ccae2b974bc030b78131a4"

REQUIRED = object()

STRUCTS = {
    "BlockStored": [
        ("block_hashes", "hashes", REQUIRED),
        ("parent_block_hash", "opt_hash", REQUIRED),
        ("token_ids", "ints", REQUIRED),
        ("block_size", "int", REQUIRED),
        ("lora_id", "opt_int", REQUIRED),
        ("medium", "opt_str", REQUIRED),
        ("lora_name", "opt_str", REQUIRED),
        ("extra_keys", "opt_extra_keys", None),
        ("group_idx", "opt_int", None),
        ("kv_cache_spec_kind", "opt_str", None),
        ("kv_cache_spec_sliding_window", "opt_int", None),
        ("locality", "opt_str", None),
        ("storage_tier", "opt_str", None),
        ("source_node", "opt_str", None),
        ("estimated_bandwidth_bps", "opt_float", None),
    ],
    "BlockRemoved": [
        ("block_hashes", "hashes", REQUIRED),
        ("medium", "opt_str", REQUIRED),
        ("group_idx", "opt_int", None),
        ("locality", "opt_str", None),
        ("storage_tier", "opt_str", None),
        ("source_node", "opt_str", None),
        ("estimated_bandwidth_bps", "opt_float", None),
    ],
    "AllBlocksCleared": [],
}
