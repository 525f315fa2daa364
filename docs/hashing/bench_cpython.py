#!/usr/bin/env python3
"""CPython doing vLLM's own block hashing, for the ratio in docs/benchmarks.md ("Hashing").

One process, the way vLLM's scheduler does it (vllm/v1/core/kv_cache_utils.py): for each full block
of 16 tokens, hash_fn((parent, tuple(tokens), extra_keys)). Prompts: 32k random token ids below
152064, as BlockHashingBenchmark; extra keys none, or a LoRA name on every block and a cache salt on
the first. Prints tokens/s per scheme (best of 20 rounds of 8 prompts), by the wall clock and per
second of CPU time (process_time), the latter for the load-independent comparison with
io.kvstore.bench.hashing.HashingCpuTime.

    python3 docs/hashing/bench_cpython.py
"""

import hashlib
import pickle
import random
import time

import cbor2
import xxhash

TOKENS = 32 * 1024
BLOCK = 16
HASH_FNS = {
    "vllm:sha256": lambda x: hashlib.sha256(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)).digest(),
    "vllm:sha256_cbor": lambda x: hashlib.sha256(cbor2.dumps(x, canonical=True)).digest(),
    "vllm:xxhash": lambda x: xxhash.xxh3_128_digest(pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)),
    "vllm:xxhash_cbor": lambda x: xxhash.xxh3_128_digest(cbor2.dumps(x, canonical=True)),
}


def hash_prompt(fn, none_hash, tokens, lora, salt):
    parent = none_hash
    out = []
    for start in range(0, len(tokens) - BLOCK + 1, BLOCK):
        keys = ([lora] if lora is not None else []) + ([salt] if start == 0 and salt else [])
        parent = fn((parent, tuple(tokens[start:start + BLOCK]), tuple(keys) if keys else None))
        out.append(parent)
    return out


def main():
    rng = random.Random(1)
    prompts = [[rng.randrange(152064) for _ in range(TOKENS)] for _ in range(8)]
    for name, fn in HASH_FNS.items():
        for lora, salt in ((None, None), ("sql-lora", "tenant-a")):
            none_hash = fn("0")
            for p in prompts:  # untimed: the first scheme measured must not pay for the interpreter's warm-up
                hash_prompt(fn, none_hash, p, lora, salt)
            best = best_cpu = 0.0
            for _ in range(20):
                t = time.perf_counter()
                c = time.process_time()
                for p in prompts:
                    hash_prompt(fn, none_hash, p, lora, salt)
                best = max(best, len(prompts) * TOKENS / (time.perf_counter() - t))
                best_cpu = max(best_cpu, len(prompts) * TOKENS / (time.process_time() - c))
            print("%-17s %-12s %8.2f M tokens/s %8.2f M tokens per CPU second"
                  % (name, "LoRA + salt" if lora else "none", best / 1e6, best_cpu / 1e6))
    digest_alone(len(prompts) * TOKENS // BLOCK)


def digest_alone(blocks, length=133):
    """hashlib.sha256 alone of as many 133-byte messages as the prompts have blocks (a 16-token block's
    pickle without extra keys when every id is >= 65536), as HashingCpuTime's floor line."""
    rng = random.Random(2)
    messages = [bytes(rng.randrange(256) for _ in range(length)) for _ in range(blocks)]
    for m in messages:
        hashlib.sha256(m).digest()
    best = float("inf")
    for _ in range(20):
        c = time.process_time()
        for m in messages:
            hashlib.sha256(m).digest()
        best = min(best, (time.process_time() - c) / blocks)
    print("SHA-256 alone of a %d-byte block message: %.0f ns per block = %.2f M tokens per CPU second"
          % (length, best * 1e9, BLOCK / best / 1e6))


if __name__ == "__main__":
    main()
