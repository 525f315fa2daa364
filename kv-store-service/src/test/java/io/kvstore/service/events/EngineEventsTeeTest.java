package io.kvstore.service.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.block.BlockHash;
import io.kvstore.block.BlockKey;
import io.kvstore.block.BlockRecord;
import io.kvstore.block.TierId;
import io.kvstore.engine.EngineEvents;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The tee passes every engine event to both listeners, including any hook the engine adds later. */
class EngineEventsTeeTest {

    @Test
    void everyEngineEventMethodIsPassedOn() throws Exception {
        for (Method m : EngineEvents.class.getMethods()) {
            if (!java.lang.reflect.Modifier.isStatic(m.getModifiers())) {
                assertThat(EngineEventsTee.class
                                .getMethod(m.getName(), m.getParameterTypes())
                                .getDeclaringClass())
                        .as("EngineEventsTee overrides %s", m.getName())
                        .isEqualTo(EngineEventsTee.class);
            }
        }
    }

    @Test
    void bothListenersHearACopyInOrder() {
        List<String> heard = new ArrayList<>();
        EngineEventsTee tee = new EngineEventsTee(listener("first", heard), listener("second", heard));
        BlockKey key = new BlockKey("ns", BlockHash.ofLong(7));
        tee.copyAdded(TierId.DRAM, new BlockRecord(key, null, 4096, 0));
        tee.copyRemoved(TierId.DRAM, key, 4096);
        assertThat(heard).containsExactly("first+", "second+", "first-", "second-");
    }

    private static EngineEvents listener(String name, List<String> heard) {
        return new EngineEvents() {
            @Override
            public void copyAdded(TierId tier, BlockRecord block) {
                heard.add(name + "+");
            }

            @Override
            public void copyRemoved(TierId tier, BlockKey key, int length) {
                heard.add(name + "-");
            }
        };
    }
}
