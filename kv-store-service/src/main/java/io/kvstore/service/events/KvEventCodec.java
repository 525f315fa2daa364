package io.kvstore.service.events;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.List;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * Encodes a batch exactly as vLLM's msgspec encoder does ({@code vllm/distributed/kv_events.py}):
 * {@code KVEventBatch} is {@code array_like} with {@code omit_defaults}, so {@code [ts, events,
 * data_parallel_rank]}; each event is a tagged struct whose tag is its class name, with the fields in
 * declaration order and the trailing fields that hold their default ({@code None}) left out ({@code extra_keys}
 * appears only when the namespace declares a LoRA or extra keys). Hashes are
 * integers as vLLM sends them by default ({@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1}); one that does not
 * fit a signed 64-bit integer is a msgpack uint64, as Python writes it.
 */
public final class KvEventCodec {

    private static final BigInteger TWO_TO_64 = BigInteger.ONE.shiftLeft(64);

    private final EventEncoding encoding;

    public KvEventCodec(EventEncoding encoding) {
        this.encoding = encoding;
    }

    /** The msgpack bytes of {@code KVEventBatch(ts, events, data_parallel_rank)}. */
    public byte[] encode(double ts, List<KvEvent> events, int dataParallelRank) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3);
            p.packDouble(ts);
            p.packArrayHeader(events.size());
            for (KvEvent e : events) {
                if (encoding == EventEncoding.ARRAY) {
                    packArray(p, e);
                } else {
                    packMap(p, e);
                }
            }
            p.packInt(dataParallelRank);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a buffer packer does no I/O
        }
    }

    private static void packArray(MessagePacker p, KvEvent event) throws IOException {
        switch (event) {
            // BlockStored(block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name)
            // (extra_keys, defaulting to None, follows only when set)
            case KvEvent.BlockStored s -> {
                p.packArrayHeader(s.extraKeys() == null ? 8 : 9);
                p.packString("BlockStored");
                hashes(p, s.hash());
                optionalHash(p, s.parent());
                p.packArrayHeader(0);
                p.packInt(s.blockSize());
                p.packNil();
                p.packString(s.medium());
                optionalString(p, s.loraName());
                if (s.extraKeys() != null) {
                    extraKeys(p, s.extraKeys());
                }
            }
            // BlockRemoved(block_hashes, medium)
            case KvEvent.BlockRemoved r -> {
                p.packArrayHeader(3);
                p.packString("BlockRemoved");
                hashes(p, r.hash());
                p.packString(r.medium());
            }
            case KvEvent.AllBlocksCleared c -> {
                p.packArrayHeader(1);
                p.packString("AllBlocksCleared");
            }
        }
    }

    private static void packMap(MessagePacker p, KvEvent event) throws IOException {
        switch (event) {
            case KvEvent.BlockStored s -> {
                p.packMapHeader(s.extraKeys() == null ? 8 : 9);
                p.packString("type").packString("BlockStored");
                p.packString("block_hashes");
                hashes(p, s.hash());
                p.packString("parent_block_hash");
                optionalHash(p, s.parent());
                p.packString("token_ids").packArrayHeader(0);
                p.packString("block_size").packInt(s.blockSize());
                p.packString("lora_id").packNil();
                p.packString("medium").packString(s.medium());
                p.packString("lora_name");
                optionalString(p, s.loraName());
                if (s.extraKeys() != null) {
                    p.packString("extra_keys");
                    extraKeys(p, s.extraKeys());
                }
            }
            case KvEvent.BlockRemoved r -> {
                p.packMapHeader(3);
                p.packString("type").packString("BlockRemoved");
                p.packString("block_hashes");
                hashes(p, r.hash());
                p.packString("medium").packString(r.medium());
            }
            case KvEvent.AllBlocksCleared c -> {
                p.packMapHeader(1);
                p.packString("type").packString("AllBlocksCleared");
            }
        }
    }

    private static void optionalString(MessagePacker p, String value) throws IOException {
        if (value == null) {
            p.packNil();
        } else {
            p.packString(value);
        }
    }

    /** {@code extra_keys} of a one-block event: a list holding the block's tuple (a msgpack array). */
    private static void extraKeys(MessagePacker p, List<Object> keys) throws IOException {
        p.packArrayHeader(1);
        p.packArrayHeader(keys.size());
        for (Object k : keys) {
            switch (k) {
                case String text -> p.packString(text);
                case Long n -> p.packLong(n);
                case Integer n -> p.packInt(n);
                default -> p.packString(k.toString());
            }
        }
    }

    private static void hashes(MessagePacker p, long hash) throws IOException {
        p.packArrayHeader(1);
        hash(p, hash);
    }

    private static void optionalHash(MessagePacker p, Long hash) throws IOException {
        if (hash == null) {
            p.packNil();
        } else {
            hash(p, hash);
        }
    }

    /** An unsigned 64-bit value: int64 forms below 2^63, uint64 above, as msgspec encodes a Python int. */
    private static void hash(MessagePacker p, long unsigned) throws IOException {
        if (unsigned >= 0) {
            p.packLong(unsigned);
        } else {
            p.packBigInteger(BigInteger.valueOf(unsigned).add(TWO_TO_64));
        }
    }

    /** vLLM's integer block hash: the last 8 bytes of the hash, big-endian ({@code int.from_bytes & 2^64-1}). */
    public static long wireHash(byte[] hash) {
        long v = 0;
        for (int i = Math.max(0, hash.length - 8); i < hash.length; i++) {
            v = (v << 8) | (hash[i] & 0xFF);
        }
        return v;
    }
}
