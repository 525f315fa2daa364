package io.kvstore.service.events;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * Encodes a batch exactly as vLLM's msgspec encoder does ({@code vllm/distributed/kv_events.py}):
 * {@code KVEventBatch} is {@code array_like} with {@code omit_defaults}, so {@code [ts, events,
 * data_parallel_rank]}; each event is a tagged struct whose tag is its class name, with the fields in
 * declaration order and the trailing fields that hold their default ({@code None}) left out ({@code extra_keys}
 * appears only in the map form, when the namespace declares a LoRA or extra keys: llm-d, the array form's
 * reader, refuses a {@code BlockStored} array of any length but 8). Hashes are
 * integers as vLLM sends them by default ({@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1}); one that does not
 * fit a signed 64-bit integer is a msgpack uint64, as Python writes it.
 *
 * <p>Everything in an event but its hashes is the same for every block of a namespace in a tier, so it is
 * encoded once into a {@link Shape}, and a {@link BatchWriter} writes each event as the shape's bytes around
 * its hashes: the publisher thread spends its time on the changes, not on re-encoding constant strings.
 */
public final class KvEventCodec {

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
     * @param keys a block's entry of vLLM's {@code extra_keys}, or null when the namespace declares none; the map
     *     form only
     */
    public Shape shape(String medium, int blockSize, @Nullable String loraName, @Nullable List<Object> keys) {
        boolean map = encoding == EventEncoding.MAP;
        // llm-d reads a BlockStored array into a struct of exactly 8 fields (vmihailenco/msgpack refuses any
        // other length and drops the whole batch), so the array form never carries extra_keys
        List<Object> extraKeys = map ? keys : null;
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
        Map<List<@Nullable Object>, Shape> shapes = new HashMap<>();
        for (KvEvent e : events) {
            switch (e) {
                case KvEvent.BlockStored s -> {
                    Shape shape = shapes.computeIfAbsent(
                            Arrays.asList(s.medium(), s.blockSize(), s.loraName(), s.extraKeys()),
                            k -> shape(s.medium(), s.blockSize(), s.loraName(), s.extraKeys()));
                    Long parent = s.parent();
                    w.stored(shape, s.hash(), parent != null, parent == null ? 0 : parent);
                }
                case KvEvent.BlockRemoved r -> {
                    Shape shape = shapes.computeIfAbsent(
                            Arrays.asList(r.medium(), 0, null, null), k -> shape(r.medium(), 0, null, null));
                    w.removed(shape, r.hash());
                }
                case KvEvent.AllBlocksCleared c -> w.cleared();
            }
        }
        return w.finish(ts, dataParallelRank);
    }

    /**
     * Appends events one by one and hands out the batch's payload; not thread-safe. It writes msgpack's few
     * forms it needs (array headers, a double, the minimal form of a non-negative integer, nil) itself into
     * a growing array: per event that is two copies of constant bytes and one or two integers.
     */
    public final class BatchWriter {
        private byte[] body = new byte[4096];
        /** A batch's head (at most 1 + 9 + 5 bytes) and then its rank (at most 9). */
        private final byte[] edges = new byte[32];

        private int length;
        private int count;

        private BatchWriter() {}

        /** Appends {@code BlockStored}; {@code parent} counts only when {@code hasParent}. */
        public void stored(Shape shape, long hash, boolean hasParent, long parent) {
            room(shape.storedHead().length + shape.storedMiddle().length + shape.storedTail().length + 18);
            put(shape.storedHead());
            length = unsigned(body, length, hash);
            put(shape.storedMiddle());
            if (hasParent) {
                length = unsigned(body, length, parent);
            } else {
                body[length++] = NIL;
            }
            put(shape.storedTail());
            count++;
        }

        /** Appends {@code BlockRemoved}. */
        public void removed(Shape shape, long hash) {
            room(shape.removedHead().length + shape.removedTail().length + 9);
            put(shape.removedHead());
            length = unsigned(body, length, hash);
            put(shape.removedTail());
            count++;
        }

        /** Appends {@code AllBlocksCleared}. */
        public void cleared() {
            byte[] event = bytes(p -> header(p, encoding == EventEncoding.MAP, 1, "AllBlocksCleared"));
            room(event.length);
            put(event);
            count++;
        }

        /** Events appended since the last {@link #finish}. */
        public int count() {
            return count;
        }

        /** The batch of the events appended so far; the writer starts empty again. */
        public byte[] finish(double ts, int dataParallelRank) {
            if (dataParallelRank < 0) {
                throw new IllegalArgumentException("data_parallel_rank must not be negative: " + dataParallelRank);
            }
            // the batch's head (array header, float, the events' array header) and its rank are written into
            // the scratch first, so the payload is made at its exact size and the events copied into it once
            int at = 0;
            edges[at++] = (byte) 0x93; // [ts, events, data_parallel_rank]
            edges[at++] = (byte) 0xcb; // float 64
            at = bigEndian(edges, at, Double.doubleToRawLongBits(ts), 8);
            if (count < 16) {
                edges[at++] = (byte) (0x90 | count);
            } else if (count < 1 << 16) {
                edges[at++] = (byte) 0xdc;
                at = bigEndian(edges, at, count, 2);
            } else {
                edges[at++] = (byte) 0xdd;
                at = bigEndian(edges, at, count, 4);
            }
            int head = at;
            int end = unsigned(edges, head, dataParallelRank);
            byte[] payload = new byte[head + length + (end - head)];
            System.arraycopy(edges, 0, payload, 0, head);
            System.arraycopy(body, 0, payload, head, length);
            System.arraycopy(edges, head, payload, head + length, end - head);
            length = 0;
            count = 0;
            return payload;
        }

        private void room(int bytes) {
            if (length + bytes > body.length) {
                body = Arrays.copyOf(body, Math.max(body.length * 2, length + bytes));
            }
        }

        private void put(byte[] bytes) {
            System.arraycopy(bytes, 0, body, length, bytes.length);
            length += bytes.length;
        }
    }

    private static final byte NIL = (byte) 0xc0;

    /**
     * Writes {@code v} read as unsigned in msgpack's smallest form (positive fixint, uint8, 16, 32 or 64), as
     * msgspec writes a non-negative Python int; returns the position after it.
     */
    static int unsigned(byte[] out, int at, long v) {
        if (v >= 0 && v < 1 << 7) {
            out[at] = (byte) v;
            return at + 1;
        } else if (v >= 0 && v < 1 << 8) {
            out[at] = (byte) 0xcc;
            return bigEndian(out, at + 1, v, 1);
        } else if (v >= 0 && v < 1 << 16) {
            out[at] = (byte) 0xcd;
            return bigEndian(out, at + 1, v, 2);
        } else if (v >= 0 && v < 1L << 32) {
            out[at] = (byte) 0xce;
            return bigEndian(out, at + 1, v, 4);
        }
        out[at] = (byte) 0xcf;
        return bigEndian(out, at + 1, v, 8);
    }

    private static int bigEndian(byte[] out, int at, long v, int bytes) {
        for (int i = bytes - 1; i >= 0; i--) {
            out[at + i] = (byte) v;
            v >>>= 8;
        }
        return at + bytes;
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
}
