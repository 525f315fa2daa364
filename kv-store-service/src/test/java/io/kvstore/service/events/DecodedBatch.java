package io.kvstore.service.events;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.Value;
import org.msgpack.value.ValueType;

/**
 * A test subscriber's reading of one {@code [topic, seq, payload]} message, decoded with msgpack-core
 * against vLLM's schema (array or map form of the events): what a router would see.
 */
public record DecodedBatch(String topic, long seq, double ts, List<Event> events, int dataParallelRank) {

    /**
     * One event: its tag and the fields kvstore sets; {@code extraKeys} is the block's entry of
     * {@code extra_keys} as strings, null when the field was left out.
     */
    public record Event(
            String type,
            List<Long> hashes,
            Long parent,
            int blockSize,
            String medium,
            String loraName,
            List<String> extraKeys) {

        Event(String type, List<Long> hashes, Long parent, int blockSize, String medium) {
            this(type, hashes, parent, blockSize, medium, null, null);
        }
    }

    static DecodedBatch decode(String topic, long seq, byte[] payload) throws IOException {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            int n = u.unpackArrayHeader();
            if (n != 3) {
                throw new IOException("KVEventBatch has " + n + " fields, expected 3");
            }
            double ts = u.unpackDouble();
            int count = u.unpackArrayHeader();
            List<Event> events = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                events.add(event(u.unpackValue()));
            }
            int dp = u.unpackInt();
            if (u.hasNext()) {
                throw new IOException("bytes after the batch");
            }
            return new DecodedBatch(topic, seq, ts, events, dp);
        }
    }

    private static Event event(Value v) throws IOException {
        Map<String, Value> f = new LinkedHashMap<>();
        String type;
        if (v.getValueType() == ValueType.ARRAY) {
            List<Value> a = v.asArrayValue().list();
            type = a.get(0).asStringValue().asString();
            String[] names = switch (type) {
                case "BlockStored" ->
                    new String[] {
                        "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"
                    };
                case "BlockRemoved" -> new String[] {"block_hashes", "medium"};
                case "AllBlocksCleared" -> new String[0];
                default -> throw new IOException("unknown tag " + type);
            };
            if (type.equals("BlockStored") && a.size() == names.length + 2) { // extra_keys, set
                names = java.util.Arrays.copyOf(names, names.length + 1);
                names[names.length - 1] = "extra_keys";
            }
            if (a.size() != names.length + 1) {
                throw new IOException(type + " has " + (a.size() - 1) + " fields, expected " + names.length);
            }
            for (int i = 0; i < names.length; i++) {
                f.put(names[i], a.get(i + 1));
            }
        } else {
            var entries = v.asMapValue().entrySet().iterator();
            var first = entries.next();
            if (!first.getKey().asStringValue().asString().equals("type")) {
                throw new IOException("the tag is not the first key");
            }
            type = first.getValue().asStringValue().asString();
            while (entries.hasNext()) {
                var e = entries.next();
                f.put(e.getKey().asStringValue().asString(), e.getValue());
            }
        }
        if (type.equals("AllBlocksCleared")) {
            return new Event(type, List.of(), null, 0, null);
        }
        List<Long> hashes = new ArrayList<>();
        for (Value h : f.get("block_hashes").asArrayValue()) {
            hashes.add(h.asIntegerValue().toBigInteger().longValue()); // uint64 wraps to the same bits
        }
        String medium = f.get("medium").asStringValue().asString();
        if (type.equals("BlockRemoved")) {
            return new Event(type, hashes, null, 0, medium);
        }
        Value parent = f.get("parent_block_hash");
        if (f.get("token_ids").asArrayValue().size() != 0 || !f.get("lora_id").isNilValue()) {
            throw new IOException("unexpected token ids or lora id");
        }
        Value lora = f.get("lora_name");
        List<String> extra = null;
        Value extraKeys = f.get("extra_keys");
        if (extraKeys != null) {
            List<Value> perBlock = extraKeys.asArrayValue().list();
            if (perBlock.size() != hashes.size()) {
                throw new IOException(
                        "extra_keys has " + perBlock.size() + " entries for " + hashes.size() + " blocks");
            }
            extra = new ArrayList<>();
            for (Value k : perBlock.getFirst().asArrayValue()) {
                extra.add(k.asStringValue().asString());
            }
        }
        return new Event(
                type,
                hashes,
                parent.isNilValue()
                        ? null
                        : parent.asIntegerValue().toBigInteger().longValue(),
                f.get("block_size").asIntegerValue().toInt(),
                medium,
                lora.isNilValue() ? null : lora.asStringValue().asString(),
                extra);
    }
}
