package io.kvstore.service.events;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import org.jspecify.annotations.Nullable;
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
 *
 * <p>Everything in an event but its hashes is the same for every block of a namespace in a tier, so it is
 * encoded once into a {@link Shape}, and a {@link BatchWriter} writes each event as the shape's bytes around
 * its hashes: the publisher thread spends its time on the changes, not on re-encoding constant strings.
 */
public final class KvEventCodec {

    private static final byte UINT64 = (byte) 0xcf;

    private final EventEncoding encoding;

    public KvEventCodec(EventEncoding encoding) {
        this.encoding = encoding;
    }

    /**
     * The constant bytes of one namespace's events in one tier: a {@code BlockStored} is {@code storedHead},
     * its hash, {@code storedMiddle}, its parent's hash (or nil), {@code storedTail}; a {@code BlockRemoved}
     * is {@code removedHead}, its hash, {@code removedTail}.
     */
    public record Shape(
            byte[] storedHead, byte[] storedMiddle, byte[] storedTail, byte[] removedHead, byte[] removedTail) {}

    /**
     * The shape of the events of blocks in the tier named {@code medium}.
     *
     * @param extraKeys a block's entry of vLLM's {@code extra_keys}, or null when the namespace declares none
     */
    public Shape shape(String medium, int blockSize, @Nullable String loraName, @Nullable List<Object> extraKeys) {
        boolean map = encoding == EventEncoding.MAP;
        int storedFields = extraKeys == null ? 8 : 9;
        // BlockStored(block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name
        // [, extra_keys]); BlockRemoved(block_hashes, medium)
        return new Shape(
                bytes(p -> {
                    header(p, map, storedFields, "BlockStored");
                    key(p, map, "block_hashes").packArrayHeader(1);
                }),
                bytes(p -> key(p, map, "parent_block_hash")),
                bytes(p -> {
                    key(p, map, "token_ids").packArrayHeader(0);
                    key(p, map, "block_size").packInt(blockSize);
                    key(p, map, "lora_id").packNil();
                    key(p, map, "medium").packString(medium);
                    optionalString(key(p, map, "lora_name"), loraName);
                    if (extraKeys != null) {
                        extraKeys(key(p, map, "extra_keys"), extraKeys);
                    }
                }),
                bytes(p -> {
                    header(p, map, 3, "BlockRemoved");
                    key(p, map, "block_hashes").packArrayHeader(1);
                }),
                bytes(p -> key(p, map, "medium").packString(medium)));
    }

    /** A writer of batches, to be reused by one thread. */
    public BatchWriter writer() {
        return new BatchWriter();
    }

    /** The msgpack bytes of {@code KVEventBatch(ts, events, data_parallel_rank)}. */
    public byte[] encode(double ts, List<KvEvent> events, int dataParallelRank) {
        BatchWriter w = writer();
        for (KvEvent e : events) {
            switch (e) {
                case KvEvent.BlockStored s -> {
                    Shape shape = shape(s.medium(), s.blockSize(), s.loraName(), s.extraKeys());
                    Long parent = s.parent();
                    w.stored(shape, s.hash(), parent != null, parent == null ? 0 : parent);
                }
                case KvEvent.BlockRemoved r -> w.removed(shape(r.medium(), 0, null, null), r.hash());
                case KvEvent.AllBlocksCleared c -> w.cleared();
            }
        }
        return w.finish(ts, dataParallelRank);
    }

    /** Appends events one by one and hands out the batch's payload; not thread-safe. */
    public final class BatchWriter {
        private final MessageBufferPacker events = MessagePack.newDefaultBufferPacker();
        private final byte[] uint64 = new byte[9];
        private int count;

        private BatchWriter() {
            uint64[0] = UINT64;
        }

        /** Appends {@code BlockStored}; {@code parent} counts only when {@code hasParent}. */
        public void stored(Shape shape, long hash, boolean hasParent, long parent) {
            try {
                events.writePayload(shape.storedHead());
                hash(hash);
                events.writePayload(shape.storedMiddle());
                if (hasParent) {
                    hash(parent);
                } else {
                    events.packNil();
                }
                events.writePayload(shape.storedTail());
                count++;
            } catch (IOException e) {
                throw new UncheckedIOException(e); // a buffer packer does no I/O
            }
        }

        /** Appends {@code BlockRemoved}. */
        public void removed(Shape shape, long hash) {
            try {
                events.writePayload(shape.removedHead());
                hash(hash);
                events.writePayload(shape.removedTail());
                count++;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /** Appends {@code AllBlocksCleared}. */
        public void cleared() {
            try {
                header(events, encoding == EventEncoding.MAP, 1, "AllBlocksCleared");
                count++;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /** Events appended since the last {@link #finish}. */
        public int count() {
            return count;
        }

        /** The batch of the events appended so far; the writer starts empty again. */
        public byte[] finish(double ts, int dataParallelRank) {
            try (MessageBufferPacker head = MessagePack.newDefaultBufferPacker()) {
                head.packArrayHeader(3);
                head.packDouble(ts);
                head.packArrayHeader(count);
                byte[] start = head.toByteArray();
                head.clear();
                head.packInt(dataParallelRank);
                byte[] end = head.toByteArray();
                byte[] body = events.toByteArray();
                byte[] payload = new byte[start.length + body.length + end.length];
                System.arraycopy(start, 0, payload, 0, start.length);
                System.arraycopy(body, 0, payload, start.length, body.length);
                System.arraycopy(end, 0, payload, start.length + body.length, end.length);
                return payload;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                events.clear();
                count = 0;
            }
        }

        /** An unsigned 64-bit value: int64 forms below 2^63, uint64 above, as msgspec encodes a Python int. */
        private void hash(long unsigned) throws IOException {
            if (unsigned >= 0) {
                events.packLong(unsigned);
            } else {
                for (int i = 8; i >= 1; i--) {
                    uint64[i] = (byte) unsigned;
                    unsigned >>>= 8;
                }
                events.writePayload(uint64);
            }
        }
    }

    @FunctionalInterface
    private interface Packing {
        void write(MessagePacker p) throws IOException;
    }

    private static byte[] bytes(Packing packing) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            packing.write(p);
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** An event's start: its tag, as the first element of a tagged array or as the {@code type} field of a map. */
    private static void header(MessagePacker p, boolean map, int fields, String tag) throws IOException {
        if (map) {
            p.packMapHeader(fields).packString("type").packString(tag);
        } else {
            p.packArrayHeader(fields).packString(tag);
        }
    }

    /** A field's name where events are maps; nothing where they are arrays. */
    private static MessagePacker key(MessagePacker p, boolean map, String name) throws IOException {
        return map ? p.packString(name) : p;
    }

    private static void optionalString(MessagePacker p, @Nullable String value) throws IOException {
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

    /** vLLM's integer block hash: the last 8 bytes of the hash, big-endian ({@code int.from_bytes & 2^64-1}). */
    public static long wireHash(byte[] hash) {
        long v = 0;
        for (int i = Math.max(0, hash.length - 8); i < hash.length; i++) {
            v = (v << 8) | (hash[i] & 0xFF);
        }
        return v;
    }
}
