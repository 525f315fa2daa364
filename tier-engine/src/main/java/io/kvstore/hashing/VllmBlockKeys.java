package io.kvstore.hashing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The {@code extra_keys} of each block of one prompt, as vLLM's {@code generate_block_hash_extra_keys}
 * builds them: the LoRA name (every block), then {@code more}, then {@code (identifier, offset -
 * blockStart)} for each multimodal item the block overlaps, in prompt order, then the cache salt (first
 * block only, and only when non-empty), then the block's prompt-embedding hash. A block with none of
 * these has {@code None} (null here) rather than an empty tuple.
 *
 * <p>vLLM walks its items (sorted by offset) with a cursor that assumes they do not overlap; for
 * overlapping items it would skip some, so they are refused here rather than hashed differently.
 */
final class VllmBlockKeys {

    private final ExtraKeys extra;
    private final MultimodalItem[] items;
    private final List<Object> common;
    private int cursor;

    /**
     * @throws HashInputException if an item lies past the prompt, items overlap, or the number of
     *     prompt-embedding hashes is not the number of full blocks
     */
    VllmBlockKeys(ExtraKeys extra, int promptTokens, int blocks) {
        this.extra = extra;
        this.items = extra.multimodal().toArray(MultimodalItem[]::new);
        Integer[] order = new Integer[items.length];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, Comparator.comparingInt(i -> items[i].offset()));
        MultimodalItem[] sorted = new MultimodalItem[items.length];
        for (int k = 0; k < order.length; k++) {
            MultimodalItem item = items[order[k]];
            String field = "multimodal[" + order[k] + "]";
            if (item.end() > promptTokens) {
                throw new HashInputException(
                        field,
                        "tokens [" + item.offset() + ", " + item.end() + ") lie past the prompt's " + promptTokens
                                + " tokens");
            }
            if (k > 0 && item.offset() < sorted[k - 1].end()) {
                throw new HashInputException(
                        field,
                        "tokens [" + item.offset() + ", " + item.end() + ") overlap multimodal[" + order[k - 1]
                                + "] at [" + sorted[k - 1].offset() + ", " + sorted[k - 1].end()
                                + "); items occupy distinct placeholder tokens");
            }
            sorted[k] = item;
        }
        System.arraycopy(sorted, 0, items, 0, items.length);
        if (!extra.promptEmbeds().isEmpty() && extra.promptEmbeds().size() != blocks) {
            throw new HashInputException(
                    "promptEmbeds",
                    "gives " + extra.promptEmbeds().size() + " block hashes for a prompt of " + blocks
                            + " full blocks; give one per full block");
        }
        List<Object> keys = new ArrayList<>(1 + extra.more().size());
        if (extra.loraName() != null) {
            keys.add(extra.loraName());
        }
        keys.addAll(extra.more());
        this.common = List.copyOf(keys);
    }

    /** The keys of the block {@code [start, end)}, the {@code index}-th; blocks are asked for in order. */
    List<Object> keys(int index, int start, int end) {
        List<Object> keys = new ArrayList<>(common.size() + 3);
        keys.addAll(common);
        while (cursor < items.length && items[cursor].end() <= start) {
            cursor++;
        }
        for (int i = cursor; i < items.length && items[i].offset() < end; i++) {
            keys.add(List.of(items[i].identifier(), items[i].offset() - start));
        }
        if (index == 0 && extra.cacheSalt() != null && !extra.cacheSalt().isEmpty()) {
            keys.add(extra.cacheSalt());
        }
        if (!extra.promptEmbeds().isEmpty()) {
            keys.add(extra.promptEmbeds().get(index));
        }
        return keys.isEmpty() ? null : keys;
    }

    /** Whether block {@code index} has the same keys as every later block without per-block keys. */
    boolean sameAsCommon(int index, int start, int end) {
        if (index == 0 || !extra.promptEmbeds().isEmpty()) {
            return false;
        }
        while (cursor < items.length && items[cursor].end() <= start) {
            cursor++;
        }
        return cursor == items.length || items[cursor].offset() >= end;
    }
}
