package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;

class KvEventCodecTest {

    @Test
    void anUnsignedHashIsWrittenInTheSmallestFormAsMsgpackWritesIt() throws Exception {
        List<Long> values = new ArrayList<>(List.of(
                0L,
                1L,
                127L,
                128L,
                255L,
                256L,
                65_535L,
                65_536L,
                (1L << 32) - 1,
                1L << 32,
                Long.MAX_VALUE,
                -1L,
                Long.MIN_VALUE));
        SplittableRandom random = new SplittableRandom(7);
        for (int i = 0; i < 1000; i++) {
            values.add(random.nextLong() >>> random.nextInt(64));
        }
        for (long v : values) {
            byte[] ours = new byte[9];
            int end = KvEventCodec.unsigned(ours, 0, v);
            try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
                if (v >= 0) {
                    p.packLong(v);
                } else {
                    p.packBigInteger(BigInteger.valueOf(v).add(BigInteger.ONE.shiftLeft(64)));
                }
                assertThat(Arrays.copyOf(ours, end))
                        .as("%s", Long.toUnsignedString(v))
                        .isEqualTo(p.toByteArray());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(EventEncoding.class)
    void aBatchDecodesAsTimestampEventsAndRank(EventEncoding encoding) throws Exception {
        KvEventCodec codec = new KvEventCodec(encoding);
        for (int count : new int[] {0, 1, 15, 16, 70_000}) {
            List<KvEvent> events = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                events.add(
                        i % 3 == 0
                                ? new KvEvent.BlockRemoved(-i, "CPU")
                                : new KvEvent.BlockStored(
                                        i * 0x9E3779B97F4A7C15L,
                                        i % 2 == 0 ? null : (long) i,
                                        16,
                                        "DISK",
                                        "lora",
                                        List.of("lora", "salt")));
            }
            byte[] payload = codec.encode(1234.5, events, 3);
            try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
                assertThat(u.unpackArrayHeader()).isEqualTo(3);
                assertThat(u.unpackDouble()).isEqualTo(1234.5);
                assertThat(u.unpackArrayHeader()).isEqualTo(count);
                for (int i = 0; i < count; i++) {
                    Value event = u.unpackValue();
                    String tag = encoding == EventEncoding.ARRAY
                            ? event.asArrayValue().get(0).asStringValue().asString()
                            : event.asMapValue()
                                    .map()
                                    .get(org.msgpack.value.ValueFactory.newString("type"))
                                    .asStringValue()
                                    .asString();
                    assertThat(tag).isEqualTo(i % 3 == 0 ? "BlockRemoved" : "BlockStored");
                }
                assertThat(u.unpackInt()).isEqualTo(3);
                assertThat(u.hasNext()).as("nothing after the rank").isFalse();
            }
        }
    }

    @Test
    void aBatchIsExactlyAsLongAsItsRanksSmallestForm() throws Exception {
        KvEventCodec codec = new KvEventCodec(EventEncoding.ARRAY);
        for (int rank : new int[] {0, 127, 128, 255, 256, 65_535, 65_536, Integer.MAX_VALUE}) {
            byte[] payload = codec.encode(1.0, List.of(new KvEvent.BlockRemoved(7, "CPU")), rank);
            try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
                assertThat(u.unpackArrayHeader()).isEqualTo(3);
                assertThat(u.unpackDouble()).isEqualTo(1.0);
                assertThat(u.unpackArrayHeader()).isEqualTo(1);
                u.unpackValue();
                assertThat(u.unpackInt()).as("rank %d", rank).isEqualTo(rank);
                assertThat(u.hasNext()).as("nothing after rank %d", rank).isFalse();
            }
        }
    }

    /**
     * llm-d's vLLM adapter (llm-d-kv-cache {@code pkg/kvevents/engineadapter/vllm_adapter.go}, 0d2ae546) reads a
     * {@code BlockStored} array into a struct of 8 fields with vmihailenco/msgpack v5, which refuses an array of
     * any other length and so drops the whole batch: a LoRA namespace's events must stay 8 long in the array
     * form. The map form, which llm-d does not read, keeps {@code extra_keys}.
     */
    @ParameterizedTest
    @EnumSource(EventEncoding.class)
    void aLoraNamespacesBlockStoredIsEightFieldsLongInTheArrayFormAsLlmdReadsIt(EventEncoding encoding)
            throws Exception {
        KvEventCodec codec = new KvEventCodec(encoding);
        byte[] payload = codec.encode(
                1.0,
                List.of(new KvEvent.BlockStored(5, 4L, 16, "CPU", "sql-lora", List.of("sql-lora", "tenant-a"))),
                0);
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            u.unpackArrayHeader();
            u.unpackDouble();
            assertThat(u.unpackArrayHeader()).isEqualTo(1);
            Value event = u.unpackValue();
            if (encoding == EventEncoding.ARRAY) {
                List<Value> fields = event.asArrayValue().list();
                assertThat(fields).hasSize(8);
                assertThat(fields.get(7).asStringValue().asString()).isEqualTo("sql-lora");
            } else {
                assertThat(event.asMapValue().map())
                        .hasSize(9)
                        .containsEntry(
                                org.msgpack.value.ValueFactory.newString("extra_keys"),
                                org.msgpack.value.ValueFactory.newArray(org.msgpack.value.ValueFactory.newArray(
                                        org.msgpack.value.ValueFactory.newString("sql-lora"),
                                        org.msgpack.value.ValueFactory.newString("tenant-a"))));
            }
        }
    }
}
