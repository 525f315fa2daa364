#!/usr/bin/env python3
"""CPython doing vLLM's own block hashing, for the ratio in docs/benchmarks.md ("Hashing").

One process, the way vLLM's scheduler does it (vllm/v1/core/kv_cache_utils.py): for each full block
of 16 tokens, hash_fn((parent, tuple(tokens), extra_keys)). Prompts: 32k random token ids below
152064, as BlockHashingBenchmark; extra keys none, or a LoRA name on every block and a cache salt on
the first. Prints tokens/s per scheme (best of 20 rounds of 8 prompts), by the wall clock and per
second of CPU time (process_time), the latter for the load-independent comparison with
io.kvstore.bench.hashing.HashingCpuTime.

Two loops, same hashes (checked): "bare" is the hash function alone in the tightest loop CPython allows;
"vLLM loop" is the shape of the code vLLM's scheduler runs per block (vllm/v1/core/kv_cache_utils.py,
upstream main as the EmbeddedLLM/vllm fork tracks it, read 2026-11-26: request_block_hasher slices the
request's read-only token list, asks generate_block_hash_extra_keys, which asks one helper each for
multimodal, LoRA and prompt-embedding keys and joins their lists, then hash_block_tokens, which calls
the sha256/xxhash wrapper of vllm/utils/hashing.py, the xxhash ones through one more helper). It is
written here from that algorithm, without vLLM installed: the Python-level calls and lists it makes per
block are the engine's own cost of hashing, which kvstore saves it.

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


class ReadOnlyTokens:
    """As vLLM's ConstantList: the request's token ids behind a Python-level __getitem__."""

    def __init__(self, ids):
        self._ids = ids

    def __getitem__(self, item):
        return self._ids[item]

    def __len__(self):
        return len(self._ids)


class Lora:
    def __init__(self, name):
        self.lora_name = name


class Request:
    """The fields of vLLM's Request that its block hasher reads."""

    def __init__(self, tokens, lora, salt):
        self._all_token_ids = tokens
        self.all_token_ids = ReadOnlyTokens(tokens)
        self.block_hashes = []
        self.mm_features = []
        self.lora_request = Lora(lora) if lora is not None else None
        self.cache_salt = salt
        self.prompt_embeds = None

    @property
    def num_tokens(self):
        return len(self._all_token_ids)


def mm_keys(request, start, end, mm_index):
    keys = []
    features = request.mm_features
    if not features:
        return keys, mm_index
    raise NotImplementedError("the benchmark's prompts carry no multimodal items")


def lora_keys(request):
    if not request.lora_request:
        return []
    return [request.lora_request.lora_name]


def embeds_keys(request, start, end):
    if request.prompt_embeds is None:
        return []
    raise NotImplementedError("the benchmark's prompts carry no prompt embeddings")


def block_extra_keys(request, start, end, mm_index):
    mm, next_mm_index = mm_keys(request, start, end, mm_index)
    lora = lora_keys(request)
    salt = [request.cache_salt] if (start == 0 and request.cache_salt) else []
    embeds = embeds_keys(request, start, end)
    keys = lora + mm + salt + embeds
    if not keys:
        return None, next_mm_index
    return tuple(keys), next_mm_index


def hash_block(fn, none_hash, parent, tokens, extra_keys):
    if not parent:
        parent = none_hash
    as_tuple = tuple(tokens)
    return fn((parent, as_tuple, extra_keys))


def vllm_loop(fn, none_hash, request):
    start = len(request.block_hashes) * BLOCK
    total = request.num_tokens
    if start + BLOCK > total:
        return []
    mm_index = 0 if start == 0 else -1
    parent = request.block_hashes[-1] if request.block_hashes else None
    out = []
    while True:
        end = start + BLOCK
        if end > total:
            break
        extra_keys, mm_index = block_extra_keys(request, start, end, mm_index)
        tokens = request.all_token_ids[start:end]
        block_hash = hash_block(fn, none_hash, parent, tokens, extra_keys)
        out.append(block_hash)
        start += BLOCK
        parent = block_hash
    return out


def vllm_sha256(x):
    data = pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.sha256(data).digest()


def xxhash_digest(data):
    if xxhash is None:
        raise ModuleNotFoundError("xxhash")
    return xxhash.xxh3_128_digest(data)


def vllm_xxhash(x):
    data = pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)
    return xxhash_digest(data)


def vllm_sha256_cbor(x):
    data = cbor2.dumps(x, canonical=True)
    return hashlib.sha256(data).digest()


def vllm_xxhash_cbor(x):
    data = cbor2.dumps(x, canonical=True)
    return xxhash_digest(data)


VLLM_FNS = {
    "vllm:sha256": vllm_sha256,
    "vllm:sha256_cbor": vllm_sha256_cbor,
    "vllm:xxhash": vllm_xxhash,
    "vllm:xxhash_cbor": vllm_xxhash_cbor,
}


def rates(run, rounds=20):
    """Best tokens/s of `rounds` timed calls of run() (after one untimed), by the wall clock and CPU time."""
    run()
    best = best_cpu = 0.0
    for _ in range(rounds):
        t = time.perf_counter()
        c = time.process_time()
        tokens = run()
        best = max(best, tokens / (time.perf_counter() - t))
        best_cpu = max(best_cpu, tokens / (time.process_time() - c))
    return best, best_cpu


def main():
    rng = random.Random(1)
    prompts = [[rng.randrange(152064) for _ in range(TOKENS)] for _ in range(8)]
    for name, fn in HASH_FNS.items():
        engine_fn = VLLM_FNS[name]
        for lora, salt in ((None, None), ("sql-lora", "tenant-a")):
            none_hash = fn("0")
            case = "LoRA + salt" if lora else "none"

            def bare():
                for p in prompts:
                    hash_prompt(fn, none_hash, p, lora, salt)
                return len(prompts) * TOKENS

            def engine():
                for p in prompts:
                    vllm_loop(engine_fn, none_hash, Request(p, lora, salt))
                return len(prompts) * TOKENS

            for p in prompts[:2]:
                assert vllm_loop(engine_fn, none_hash, Request(p, lora, salt)) == hash_prompt(
                    fn, none_hash, p, lora, salt), "the two loops must hash alike"
            for loop, run in (("bare", bare), ("vLLM loop", engine)):
                best, best_cpu = rates(run)
                print("%-17s %-12s %-9s %8.2f M tokens/s %8.2f M tokens per CPU second"
                      % (name, case, loop, best / 1e6, best_cpu / 1e6))
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
