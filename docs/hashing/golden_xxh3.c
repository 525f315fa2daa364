/* Golden vectors for kvstore's xxh3 block hash (Dynamo KVBM's chain), from the xxHash C library.
 *   block[i] = XXH3_64bits_withSeed(u32-LE tokens of block i, salt)
 *   seq[0] = block[0];  seq[i] = XXH3_64bits_withSeed(u64-LE seq[i-1] || u64-LE block[i], 0)
 *   salt = 0 without extra keys, else XXH3_64bits_withSeed("lora=<l>;salt=<s>;<more,...>", 0)
 * Build and run (Debian): apt-get install -y libxxhash-dev
 *   gcc -O2 -o /tmp/golden_xxh3 docs/hashing/golden_xxh3.c -lxxhash && /tmp/golden_xxh3
 * (x86-64 and aarch64 are little-endian, so the arrays below are already in LE byte order.) */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

static void prompt(const char *name, const uint32_t *tokens, int n, int block_size, uint64_t salt) {
    uint64_t seq = 0;
    printf("%s:", name);
    for (int b = 0; b < n / block_size; b++) {
        uint64_t block = XXH3_64bits_withSeed(tokens + b * block_size, 4 * (size_t) block_size, salt);
        if (b == 0) {
            seq = block;
        } else {
            uint64_t pair[2] = {seq, block};
            seq = XXH3_64bits_withSeed(pair, sizeof pair, 0);
        }
        printf(" %016llx", (unsigned long long) seq);
    }
    printf("\n");
}

int main(void) {
    uint32_t t[64];
    for (int i = 0; i < 16; i++) t[i] = i;
    prompt("one block", t, 16, 16, 0);
    for (int i = 0; i < 48; i++) t[i] = i * 7 + 1;
    prompt("three blocks", t, 48, 16, 0);
    const char *salt = "lora=my-lora;salt=tenant-a;mm-hash-1,42";
    uint64_t s = XXH3_64bits_withSeed(salt, strlen(salt), 0);
    printf("salt hash: %016llx\n", (unsigned long long) s);
    for (int i = 0; i < 32; i++) t[i] = 100 + i;
    prompt("extra keys", t, 32, 16, s);
    uint32_t big[16] = {65536, 2147483647u, 100000, 4294967295u / 2, 70000, 65535, 255, 256, 23, 24, 0, 1, 2147483646u, 131072, 99, 1u << 20};
    prompt("large ids", big, 16, 16, 0);
    for (int i = 0; i < 40; i++) t[i] = i;
    prompt("partial tail", t, 40, 16, 0);
    return 0;
}
