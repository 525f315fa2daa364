package io.kvstore.engine;

import io.kvstore.block.BlockKey;
import io.kvstore.block.TierId;
import io.kvstore.tier.nvme.StandInDeviceFileCopier;
import java.lang.foreign.Arena;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * Child process of {@link DeviceStoragePathTest}: stores blocks into the (emulated) device tier, whose
 * victims go straight to NVMe through the stand-in copier, and prints "ACK id" once a block is on NVMe,
 * until it is killed.
 */
public final class DeviceDemotionCrashWriter {

    static final int MAX_BLOCKS = 900;

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        try (Arena arena = Arena.ofShared();
                TierEngine engine =
                        DeviceStoragePathTest.open(dir, false, EngineEvents.NONE, new StandInDeviceFileCopier[1])) {
            Deque<Long> pending = new ArrayDeque<>();
            for (long id = 1; id <= MAX_BLOCKS; id++) {
                engine.put(TestBlocks.key("m", id), null, TestBlocks.bytes(arena, id, DeviceStoragePathTest.BLOCK));
                pending.add(id);
                if (id % 4 == 0) {
                    engine.awaitMoves();
                }
                for (var it = pending.iterator(); it.hasNext(); ) {
                    long p = it.next();
                    BlockKey key = TestBlocks.key("m", p);
                    var info = engine.info(key);
                    if (info != null && info.residentIn(TierId.NVME)) {
                        System.out.println("ACK " + p);
                        it.remove();
                    }
                }
                System.out.flush();
            }
        }
    }
}
