/*
 * Golden vectors for kvstore's `xxh3` block hashes, computed with the C reference (libxxhash).
 *
 * Mirrors Dynamo KVBM (lib/llm/src/tokens.rs, lib/tokens/src/lib.rs, and the SaltPayload of its
 * scheduler Request):
 *
 *   salt_hash = XXH3_64bits_withSeed(serde_json({"salt":S,"lora_name":L}), 0)   absent fields omitted
 *   block[i]  = XXH3_64bits_withSeed(u32-LE tokens of block i, salt_hash)
 *   seq[0]    = block[0]
 *   seq[i]    = XXH3_64bits_withSeed(u64-LE seq[i-1] || u64-LE block[i], salt_hash)
 *
 * Build and run (Debian: apt-get install -y libxxhash-dev):
 *
 *   gcc -O2 -Wall -o /tmp/golden_xxh3 docs/hashing/golden_xxh3.c -lxxhash && /tmp/golden_xxh3
 *
 * and compare its output with the vectors in
 * tier-engine/src/test/java/io/kvstore/hashing/Xxh3HasherTest.java.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>

static void put_u32le(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Prints the sequence hash of every full block; a trailing partial block is ignored. */
static void hash_prompt(const char *name, const uint32_t *tokens, size_t n, size_t block_size,
                        uint64_t salt_hash) {
    uint8_t buf[4 * 1024];
    uint8_t pair[16];
    uint64_t parent = 0;
    printf("%s (salt_hash %016llx)\n", name, (unsigned long long)salt_hash);
    for (size_t b = 0; b + 1 <= n / block_size; b++) {
        for (size_t i = 0; i < block_size; i++) put_u32le(buf + 4 * i, tokens[b * block_size + i]);
        uint64_t block = XXH3_64bits_withSeed(buf, 4 * block_size, salt_hash);
        uint64_t seq = block;
        if (b > 0) {
            put_u64le(pair, parent);
            put_u64le(pair + 8, block);
            seq = XXH3_64bits_withSeed(pair, 16, salt_hash);
        }
        printf("  block %016llx seq %016llx\n", (unsigned long long)block, (unsigned long long)seq);
        parent = seq;
    }
}

static uint64_t salt_hash_of(const char *json) {
    uint64_t h = XXH3_64bits_withSeed(json, strlen(json), 0);
    printf("salt_hash(%s) = %016llx\n", json, (unsigned long long)h);
    return h;
}

static void fill(uint32_t *t, uint32_t start, size_t n) {
    for (size_t i = 0; i < n; i++) t[i] = start + (uint32_t)i;
}

int main(void) {
    uint32_t t[64];
    /* Salt payloads exactly as serde_json::to_vec writes them: compact, fields in declaration
     * order (salt, lora_name), None omitted, '"' '\\' and control characters escaped, other
     * characters raw UTF-8. */
    uint64_t none = salt_hash_of("{}");
    uint64_t both = salt_hash_of("{\"salt\":\"tenant-a\",\"lora_name\":\"sql-lora\"}");
    uint64_t lora = salt_hash_of("{\"lora_name\":\"sql-lora\"}");
    /* salt = tenant "\xc3\xa9"<TAB>\<U+0001> : quote, non-ASCII, tab, backslash, other control */
    uint64_t odd = salt_hash_of("{\"salt\":\"tenant \\\"\xc3\xa9\\\"\\t\\\\\\u0001\"}");

    fill(t, 0, 16);
    hash_prompt("one block 0..15, salt hash 0", t, 16, 16, 0);
    hash_prompt("one block 0..15, no salt", t, 16, 16, none);

    fill(t, 1000, 53);
    hash_prompt("three blocks 1000..1047 + 5-token tail, salt hash 0", t, 53, 16, 0);
    hash_prompt("three blocks 1000..1047 + 5-token tail, no salt", t, 53, 16, none);

    fill(t, 0, 32);
    hash_prompt("two blocks 0..31, lora 'sql-lora', salt 'tenant-a'", t, 32, 16, both);
    hash_prompt("two blocks 0..31, lora 'sql-lora'", t, 32, 16, lora);
    hash_prompt("two blocks 0..31, odd salt", t, 32, 16, odd);

    const uint32_t wide[16] = {0, 23, 24, 255, 256, 65535, 65536, 70000, 16777216, 2147483646u,
                               2147483647u, 100000, 131072, 1, 2, 3};
    hash_prompt("wide token ids (>= 2^16, 2^31-1), one block, no salt", wide, 16, 16, none);

    fill(t, 5, 8);
    hash_prompt("block size 4, tokens 5..12, no salt", t, 8, 4, none);
    return 0;
}
