package io.kvstore.hashing;

import static io.kvstore.hashing.GoldenTokens.WIDE;
import static io.kvstore.hashing.GoldenTokens.hex;
import static io.kvstore.hashing.GoldenTokens.seq;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The four vLLM schemes against the vectors of docs/hashing/golden_vllm.py (Debian's Python: pickle,
 * hashlib, python3-cbor2, python3-xxhash), every case for every scheme. The same cases were also run
 * through vLLM's own {@code get_request_block_hasher}, {@code generate_block_hash_extra_keys} and
 * {@code vllm/utils/hashing.py} functions, which gave the same hashes.
 */
class VllmHasherGoldenTest {

    /** The cases of golden_vllm.py, in its order. */
    enum Case {
        ONE_BLOCK("0", seq(0, 16), 16, ExtraKeys.NONE),
        EMPTY_SEED("", seq(0, 16), 16, ExtraKeys.NONE),
        THREE_BLOCKS_SEED_42("42", seq(1000, 53), 16, ExtraKeys.NONE),
        EVERY_INT_WIDTH("0", WIDE, 4, ExtraKeys.NONE),
        LORA_AND_SALT("0", seq(0, 32), 16, ExtraKeys.of("sql-lora", "tenant-a")),
        EMPTY_LORA_AND_SALT("0", seq(0, 32), 16, ExtraKeys.of("", "")),
        ONE_CHAR_LORA_AND_SALT("0", seq(0, 32), 16, ExtraKeys.of("a", "a")),
        MULTIMODAL(
                "0",
                seq(0, 64),
                16,
                new ExtraKeys(
                        "sql-lora",
                        "tenant-a",
                        List.of(),
                        List.of(
                                new MultimodalItem("img-c", 40, 24),
                                new MultimodalItem("img-a", 4, 20),
                                new MultimodalItem("img-b", 24, 8)),
                        List.of())),
        PROMPT_EMBEDS("0", new int[50], 16, new ExtraKeys(null, null, List.of(), List.of(), embeds(3))),
        SEVERAL_FRAMES(
                "0",
                IntStream.range(0, 20000).map(i -> (int) ((i * 7919L) % 200000)).toArray(),
                20000,
                ExtraKeys.of("l", "s"));

        final String seed;
        final int[] tokens;
        final int blockSize;
        final ExtraKeys extra;

        Case(String seed, int[] tokens, int blockSize, ExtraKeys extra) {
            this.seed = seed;
            this.tokens = tokens;
            this.blockSize = blockSize;
            this.extra = extra;
        }
    }

    /** sha256("embeds of block i") for each block, as golden_vllm.py's EMBEDS. */
    private static List<byte[]> embeds(int blocks) {
        List<byte[]> out = new ArrayList<>();
        try {
            for (int i = 0; i < blocks; i++) {
                out.add(MessageDigest.getInstance("SHA-256")
                        .digest(("embeds of block " + i).getBytes(StandardCharsets.US_ASCII)));
            }
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    private static final Map<Case, Map<HashScheme, List<String>>> GOLDEN = Map.ofEntries(
            Map.entry(
                    Case.ONE_BLOCK,
                    Map.of( // one block, seed 0
                            HashScheme.SHA256,
                            List.of("6358e31578a64b75ebe28cdb99d3beae65de82a2087321dc6ec84ae048faaaa6"),
                            HashScheme.SHA256_CBOR,
                            List.of("d830de3d42c00f25a2949b5d12d98642664a44872c1614c5b0147556276afc9c"),
                            HashScheme.XXHASH,
                            List.of("8ef953407c0da43eacbb3639ed2bff4d"),
                            HashScheme.XXHASH_CBOR,
                            List.of("209f5d549fc07c8e39d823615ede61ce"))),
            Map.entry(
                    Case.EMPTY_SEED,
                    Map.of( // empty PYTHONHASHSEED
                            HashScheme.SHA256,
                            List.of("5d031d4e09e96bad5168a9f4f72611aca4d0d450cce05a68b43bf8ccdb595417"),
                            HashScheme.SHA256_CBOR,
                            List.of("7e291191706c2eff0b6edcba2423b70cc5fbc3675844947dcae6a33e0a98d586"),
                            HashScheme.XXHASH,
                            List.of("42aae526c5dde62c0c54383a5dd13696"),
                            HashScheme.XXHASH_CBOR,
                            List.of("36a0628f5f1af6c2b17de54f179152c5"))),
            Map.entry(
                    Case.THREE_BLOCKS_SEED_42,
                    Map.of( // three blocks and a partial one, seed 42
                            HashScheme.SHA256,
                            List.of(
                                    "c066f06e34db5c73ef4051801d117ec365ccc55cb2c7fe43834131d0f4d6a549",
                                    "6d04bec6e6c8013d7168f015a24e42ec6c9e082193e4419e909a1796e260622b",
                                    "fe4580809dbf4cbc59933d1bdf45ced68e574c4eaf7b0444b5b15232f71c90ce"),
                            HashScheme.SHA256_CBOR,
                            List.of(
                                    "8bc90083e256e33ce5412b0cf36581760664c7249eca7d0cb95d139f9a1123c8",
                                    "f163e413f12b0dc6df17b097f07a65f027947b809ac2c799b913759491545982",
                                    "01c355f8b1c26ce576375649c0d29fcf64c80df70cf9ac34682dc0adb1d694e9"),
                            HashScheme.XXHASH,
                            List.of(
                                    "8f5796bbe9ef1e0583710a5bf0d7fa36",
                                    "5b4e9cdfe48037fff492a2d355c44920",
                                    "876f45f66399c4244a7c531417ae96a2"),
                            HashScheme.XXHASH_CBOR,
                            List.of(
                                    "872809b309cff0e453bb4aca85d14c8c",
                                    "483d6bfe4e5f160b3c8c1c6a0f01f6b2",
                                    "c42e8c5ffadd1e52c2e7b11bdc51de15"))),
            Map.entry(
                    Case.EVERY_INT_WIDTH,
                    Map.of( // every int width, block size 4
                            HashScheme.SHA256,
                            List.of(
                                    "545f0ac9f9f843830a203b2f3d14417a6c11babbf9e992b08b9fba32e4295950",
                                    "67968a144b541e7e372c21ee6ae1350548a941f8984bfa5f2745e787e6b82078",
                                    "06e3a2c9aa5b753d494a661db07fc72fae1d8bbea4ab70c7cb81281ba46cfc3d",
                                    "86326016ca069ae8054c962dae2768b29244c3b838b8525a78f5559d702bc5ed"),
                            HashScheme.SHA256_CBOR,
                            List.of(
                                    "ca90027d467f8ae0c02e71aa4eff29f116d1b74ca16446a60ab640f53e976f43",
                                    "d6600f7514c9f63f1b350458a367f0cc555be785d0c6a1353b14dbf0ec583576",
                                    "2073fe1b9cdf1eca86f2824fdf746a03236105b68b6bf98d32958fb2766f5187",
                                    "4bdb6e34ac00850d45058a135ffd23a7ccd5f8bbf2b1c0bc7b399040d19b0b74"),
                            HashScheme.XXHASH,
                            List.of(
                                    "67c3a88dbd0512170d00efde2ce64f6a",
                                    "d8118467c22f32d1aecf409ede8beb3c",
                                    "9aa60e4861d85e266742fa724b94c072",
                                    "b4082c64441a354af6c049d045258f3b"),
                            HashScheme.XXHASH_CBOR,
                            List.of(
                                    "cd09d8ae700da635d72fa41ccddba746",
                                    "ba2f33163cf49ac78f6963dec4fe5be2",
                                    "436d166454c086a587bc64e467fd4cbe",
                                    "efc0e51ac9b3d54cb90d9ac4ffd22752"))),
            Map.entry(
                    Case.LORA_AND_SALT,
                    Map.of( // lora and cache salt
                            HashScheme.SHA256,
                            List.of(
                                    "b8b904c0e597bdfbfa00c06d644d1550f2a70ce450f7a0137214c71b1a2344cd",
                                    "51a454417fc8d767a2fc1793deff88dce8feeebea5003a0d273d489bb626e5c0"),
                            HashScheme.SHA256_CBOR,
                            List.of(
                                    "83c16040d24a32798c0775138bf9bca3cedb3bca889d813ccbe5b1591b966c61",
                                    "0c45318bb9fdd24ecb398ab264e2fe27d33977cff40ae4d92bb22f836df98bea"),
                            HashScheme.XXHASH,
                            List.of("33298887434b1c3706828e3b8e4a3963", "44d6415e30f352d439fc09ab5034eefe"),
                            HashScheme.XXHASH_CBOR,
                            List.of("eb6ee61b9e081056ea6cb45bc88a3053", "c31938104b49f10fce22f456805c7246"))),
            Map.entry(
                    Case.EMPTY_LORA_AND_SALT,
                    Map.of( // empty lora kept, empty salt dropped
                            HashScheme.SHA256,
                            List.of(
                                    "36c8518a64664b1f3e6e9f5b0096290623f25062eaff00ba2531fae0fafaad2c",
                                    "1087f949358e20b91f03d23ceec1bed1fcc73147d57b74d229d8422cee4b9243"),
                            HashScheme.SHA256_CBOR,
                            List.of(
                                    "566295d5cd2026a3b3cfd73d425bb210eb2e3d266f7bad520a0e6e2173974e0b",
                                    "89e52460ee2df6e81813495e6d1c77e4adf591c010d825863fefd6a2bcb1f35a"),
                            HashScheme.XXHASH,
                            List.of("d9af794902004ea2b4d259693600648e", "c94fdbbe4759c5e8feb9bd88cfcf7de0"),
                            HashScheme.XXHASH_CBOR,
                            List.of("47dd085f2bbeeb03875629459e2014b1", "85a44cae8486b9c8eb5bf5904914cd9a"))),
            Map.entry(
                    Case.ONE_CHAR_LORA_AND_SALT,
                    Map.of( // one-character lora and salt (one object to CPython)
                            HashScheme.SHA256,
                            List.of(
                                    "086c5979923a4be3f17ccfec44af45f9d668aa4d17dcf6e4561a425f14d3bd2c",
                                    "39a86e9ec590d9cd6399086ad45e328de2c03126cc2d0810cae12a2dec88c490"),
                            HashScheme.SHA256_CBOR,
                            List.of(
                                    "ef9e34552090ce66be5959b2227f07bf91f53eb973319a0d26d4b05efed55baa",
                                    "c2b6fba2d5de329294858dab059249880d5097d5a6ae341c5f087e3027461b44"),
                            HashScheme.XXHASH,
                            List.of("e1313fb287afff8ab591b20ab007e4a7", "b1a25aa60a02d0536c4b403f119ea267"),
                            HashScheme.XXHASH_CBOR,
                            List.of("936ebe55ac147896adba529c5a345d9e", "b320d630cd315297887c4321f460316b"))),
            Map.entry(
                    Case.MULTIMODAL,
                    Map.of( // multimodal items on the blocks they overlap
                            HashScheme.SHA256,
                            List.of(
                                    "109373522048a9fda0db05a088d61fe64c9bbc659aafa5bfdd90b3bf88a8be68",
                                    "ae2b3687f252b4ceb9d94cfb10a0807f213708f6108063b7d4107877a15fc036",
                                    "63170aa6d4458653a692f2b02bad4fb880870bee7409003ee72c16a78bedc25d",
                                    "38f1021573dc81f686e4e1de3bd0cd1acd80752359e777d490084e7ffb72e8f6"),
                            HashScheme.SHA256_CBOR,
                            List.of(
                                    "b575291c651260f9f070cc8d859de97a32b773054395168cd9d5eb4898816aeb",
                                    "677dd6d4ca4fa011df0d991bdf2fa6e03805cc0e5ad7d329c8163a615c1fe596",
                                    "f70802180f13b36a32c6586077f222b3561f297c2150abba4555c0de7fa64358",
                                    "48cacfd8aa676553f0de5fc3c448f344afeb77b7154a05177711c18deafbc1e6"),
                            HashScheme.XXHASH,
                            List.of(
                                    "b354c3ab0926a2a833fa724c49338855",
                                    "46356c87fbb9517f20e843befd55fe65",
                                    "ee1383995f319e10b4b751ae194c4fc4",
                                    "10095e324e013f23b6b1cf50e110e27d"),
                            HashScheme.XXHASH_CBOR,
                            List.of(
                                    "c076b48136266cd273b24eaca56e4047",
                                    "ebba3def038e33d576050a38af5ebbde",
                                    "7481099704b6b3967d3facef11f65f15",
                                    "5afd4666dc48599fc89b8686dd2eded3"))),
            Map.entry(
                    Case.PROMPT_EMBEDS,
                    Map.of( // prompt embeddings
                            HashScheme.SHA256,
                            List.of(
                                    "329ad6e53f502dc763f1aa87090ab48b1655b0f7b81c229713f45b68e444f03d",
                                    "e0f487d777ceaff78dcf5d358ce9cfab197cc011b87c4a17e23af77e726c0f51",
                                    "41503219f4ec0433e27d34dc02d77e38163632b40df179f2976d8df518133af9"),
                            HashScheme.SHA256_CBOR,
                            List.of(
                                    "646a70c68a68c8f108e47f4508ea5e24a0387d89d950a6b76f48a4d7bbb64b07",
                                    "b270f43fc454d80a7ba97721bb6db49c1dc6bdc4185a54dfe50d0f3fcd5bf551",
                                    "f150d948080704b44528be44b9ac84528a0e569d163dd1587f412804a9a2e3e9"),
                            HashScheme.XXHASH,
                            List.of(
                                    "1dd9036375d41713cc2525b419b6f435",
                                    "811bed742b8cfe15d50a6befe50b8fa9",
                                    "2f8ad4235458ea25626fc0b1a96a5ce6"),
                            HashScheme.XXHASH_CBOR,
                            List.of(
                                    "61683b37cda896c65979ba73e3c0d5f6",
                                    "64e10a07bfb086745fa759b72c0abf35",
                                    "eeed51edb77d2dce2b196fcc878d489c"))),
            Map.entry(
                    Case.SEVERAL_FRAMES,
                    Map.of( // a block over 64 KiB of pickle (several frames)
                            HashScheme.SHA256,
                            List.of("9340a8011bc8fd8d556a2c8895d0a34a4711e6aad2f3a26f2e975d98c6444bfc"),
                            HashScheme.SHA256_CBOR,
                            List.of("b69487793f9232e9a6beebec1926d512b92576c9cbd7a81c2b04d3372de99794"),
                            HashScheme.XXHASH,
                            List.of("8af9da68052f2f78348534cc5552a06f"),
                            HashScheme.XXHASH_CBOR,
                            List.of("0667905e7ed14fd606e7da2448c0839f"))));

    static Stream<Arguments> cases() {
        return GOLDEN.entrySet().stream()
                .flatMap(c ->
                        c.getValue().entrySet().stream().map(s -> Arguments.of(c.getKey(), s.getKey(), s.getValue())));
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void blockHashesEqualThePythonReference(Case c, HashScheme scheme, List<String> expected) {
        VllmHasher hasher = new VllmHasher(scheme, c.seed);
        assertThat(hex(hasher.hashPrompt(c.tokens, c.blockSize, c.extra))).isEqualTo(expected);
    }

    /** Not only the vectors copied above: the program itself, run now, prints what Java computes. */
    @Test
    void everyCaseHashesAsTheProgramInDocsPrintsIt() throws Exception {
        List<GoldenPrograms.Printed> printed = GoldenPrograms.run("golden_vllm.py", "cbor2", "xxhash");
        assertThat(printed).hasSize(Case.values().length);
        for (Case c : Case.values()) {
            GoldenPrograms.Printed p = printed.get(c.ordinal());
            assertThat(p.hashes())
                    .as(p.title())
                    .containsOnlyKeys("vllm:sha256", "vllm:sha256_cbor", "vllm:xxhash", "vllm:xxhash_cbor");
            p.hashes().forEach((name, hashes) -> {
                HashScheme scheme = HashScheme.parse(name);
                assertThat(hex(new VllmHasher(scheme, c.seed).hashPrompt(c.tokens, c.blockSize, c.extra)))
                        .as("%s: %s", p.title(), name)
                        .isEqualTo(hashes);
                assertThat(GOLDEN.get(c).get(scheme))
                        .as("%s: %s, copied above", p.title(), name)
                        .isEqualTo(hashes);
            });
        }
    }
}
