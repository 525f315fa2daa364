package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The order a tier's recovered blocks are catalogued and announced in at start-up: each after its parent. */
final class ParentFirst {

    private ParentFirst() {}

    /**
     * {@code records} with each block after its parent where the parent is among them: a tier gives them in
     * its index's order (by hash), and each is announced as a copy added (KV events, which routers drop for
     * a block whose parent they do not know yet).
     */
    static List<BlockRecord> order(List<BlockRecord> records) {
        Map<BlockKey, BlockRecord> left = new HashMap<>(records.size() * 2);
        for (BlockRecord r : records) {
            left.put(r.key(), r);
        }
        List<BlockRecord> out = new ArrayList<>(records.size());
        ArrayDeque<BlockRecord> chain = new ArrayDeque<>();
        for (BlockRecord r : records) {
            for (BlockRecord b = left.remove(r.key());
                    b != null;
                    b = b.parent() == null
                            ? null
                            : left.remove(new BlockKey(b.key().namespace(), b.parent()))) {
                chain.push(b); // and its ancestors not yet placed, the root on top
            }
            while (!chain.isEmpty()) {
                out.add(chain.pop());
            }
        }
        return out;
    }
}
