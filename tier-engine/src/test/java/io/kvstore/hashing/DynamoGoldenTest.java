package io.kvstore.hashing;

import static io.kvstore.hashing.GoldenTokens.hex;
import static io.kvstore.hashing.GoldenTokens.seq;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Both Dynamo schemes against the vectors of docs/hashing/golden_dynamo.py (Debian's Python and
 * python3-xxhash), in particular how each treats an empty LoRA name or cache salt.
 */
class DynamoGoldenTest {

    private final BlockHasher kvbm = BlockHasher.create(HashScheme.KVBM_V1, null);
    private final BlockHasher router = BlockHasher.create(HashScheme.DYNAMO_ROUTER, null);

    /** One case of golden_dynamo.py: a prompt, its block size and its LoRA name and salt. */
    private record ProgramCase(int[] tokens, int blockSize, ExtraKeys extra) {}

    /** golden_dynamo.py's cases, in its order. */
    private static final List<ProgramCase> PROGRAM_CASES = List.of(
            new ProgramCase(new int[] {0}, 1, ExtraKeys.of(null, "")),
            new ProgramCase(new int[] {0}, 1, ExtraKeys.NONE),
            new ProgramCase(seq(1000, 53), 16, ExtraKeys.NONE),
            new ProgramCase(seq(0, 32), 16, ExtraKeys.of("sql-lora", "tenant-a")),
            new ProgramCase(seq(0, 32), 16, ExtraKeys.of("sql-lora", null)),
            new ProgramCase(seq(0, 32), 16, ExtraKeys.of(null, "tenant-a")),
            new ProgramCase(seq(0, 32), 16, ExtraKeys.of("", "")));

    /** The vectors below were copied from the program; this holds Java to the program itself, run now. */
    @Test
    void everyCaseHashesAsTheProgramInDocsPrintsIt() throws Exception {
        List<GoldenPrograms.Printed> printed = GoldenPrograms.run("golden_dynamo.py", "xxhash");
        assertThat(printed).hasSize(PROGRAM_CASES.size());
        for (int i = 0; i < printed.size(); i++) {
            GoldenPrograms.Printed p = printed.get(i);
            ProgramCase c = PROGRAM_CASES.get(i);
            assertThat(p.hashes()).as(p.title()).containsOnlyKeys("dynamo:kvbm_v1", "dynamo:router");
            assertThat(hex(kvbm.hashPrompt(c.tokens(), c.blockSize(), c.extra())))
                    .as("%s: dynamo:kvbm_v1", p.title())
                    .isEqualTo(p.hashes().get("dynamo:kvbm_v1"));
            assertThat(hex(router.hashPrompt(c.tokens(), c.blockSize(), c.extra())))
                    .as("%s: dynamo:router", p.title())
                    .isEqualTo(p.hashes().get("dynamo:router"));
        }
    }

    @Test
    void kvbmV1HashesAnEmptyCacheSaltAsPresent() {
        // the case of issue 12: Dynamo gives d16ff2ff5b54aeef, kvstore used to give afcc8348f095feac
        assertThat(hex(kvbm.hashPrompt(new int[] {0}, 1, ExtraKeys.of(null, ""))))
                .containsExactly("d16ff2ff5b54aeef");
        assertThat(hex(kvbm.hashPrompt(new int[] {0}, 1, ExtraKeys.NONE))).containsExactly("afcc8348f095feac");
        assertThat(hex(kvbm.hashPrompt(seq(0, 32), 16, ExtraKeys.of("", ""))))
                .containsExactly("5973b9c654336028", "3d11f0abdc5ee82a");
    }

    @Test
    void theRouterDropsEmptyStrings() {
        assertThat(hex(router.hashPrompt(new int[] {0}, 1, ExtraKeys.of(null, ""))))
                .containsExactly("e44f30ed0f7bc171");
        assertThat(hex(router.hashPrompt(new int[] {0}, 1, ExtraKeys.NONE))).containsExactly("e44f30ed0f7bc171");
        assertThat(hex(router.hashPrompt(seq(0, 32), 16, ExtraKeys.of("", ""))))
                .containsExactly("d47a8f41c833328a", "bf15dffb16447f38");
    }

    @Test
    void routerSeedsBlocksWithLoraAndSaltAndChainsWith1337() {
        assertThat(hex(router.hashPrompt(seq(1000, 53), 16, ExtraKeys.NONE)))
                .containsExactly("f7e6c5a1896bad24", "3d5ff0dd2a93fd39", "cf4f246cbcc8787b");
        assertThat(hex(router.hashPrompt(seq(0, 32), 16, ExtraKeys.of("sql-lora", "tenant-a"))))
                .containsExactly("3dfa1f95970faa50", "4a6462aa4e177696");
        assertThat(hex(router.hashPrompt(seq(0, 32), 16, ExtraKeys.of("sql-lora", null))))
                .containsExactly("729ca4b87bd16855", "7961eb592495a094");
        assertThat(hex(router.hashPrompt(seq(0, 32), 16, ExtraKeys.of(null, "tenant-a"))))
                .containsExactly("1d92885ff53eb398", "bdcc2d4c22125718");
    }

    @Test
    void kvbmV1MatchesThePythonReferenceToo() {
        assertThat(hex(kvbm.hashPrompt(seq(1000, 53), 16, ExtraKeys.NONE)))
                .containsExactly("199ba7f056dcbc8d", "2db9a8be4d465f01", "d0a83c1db798727c");
        assertThat(hex(kvbm.hashPrompt(seq(0, 32), 16, ExtraKeys.of("sql-lora", "tenant-a"))))
                .containsExactly("fc0b8b77af857568", "7c23d9a32eee0554");
        assertThat(hex(kvbm.hashPrompt(seq(0, 32), 16, ExtraKeys.of("sql-lora", null))))
                .containsExactly("3369ad1be860bc8e", "6aa2d2262f34c61b");
        assertThat(hex(kvbm.hashPrompt(seq(0, 32), 16, ExtraKeys.of(null, "tenant-a"))))
                .containsExactly("5ff76f4e5afa34b2", "b685d7f05339c51d");
    }

    @Test
    void aFixedRouterSeedOf1337IsTheRouterWithoutLoraOrSalt() {
        BlockHasher fixed = BlockHasher.create(HashScheme.DYNAMO_ROUTER, "1337");
        assertThat(fixed.hashPrompt(seq(1000, 53), 16, ExtraKeys.of("", "")))
                .isEqualTo(router.hashPrompt(seq(1000, 53), 16, ExtraKeys.NONE));
        assertThatThrownBy(() -> fixed.hashPrompt(seq(0, 16), 16, ExtraKeys.of(null, "tenant-a")))
                .isInstanceOf(HashInputException.class)
                .hasMessageStartingWith("cacheSalt: this namespace uses the fixed salt hash 1337");
    }

    @Test
    void dynamoSchemesRefuseKeysTheyHaveNoPlaceFor() {
        ExtraKeys image = new ExtraKeys(null, null, List.of(), List.of(new MultimodalItem("img", 0, 4)), List.of());
        assertThatThrownBy(() -> router.hashPrompt(seq(0, 16), 16, image))
                .isInstanceOf(HashInputException.class)
                .satisfies(e -> assertThat(((HashInputException) e).field()).isEqualTo("multimodal"));
        ExtraKeys embeds = new ExtraKeys(null, null, List.of(), List.of(), List.of(new byte[32]));
        assertThatThrownBy(() -> kvbm.hashPrompt(seq(0, 16), 16, embeds))
                .isInstanceOf(HashInputException.class)
                .satisfies(e -> assertThat(((HashInputException) e).field()).isEqualTo("promptEmbeds"));
    }
}
