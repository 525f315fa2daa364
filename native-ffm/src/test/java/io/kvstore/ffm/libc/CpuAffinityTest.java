package io.kvstore.ffm.libc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class CpuAffinityTest {

    @Test
    void aThreadRestrictedToOneCpuReportsOnlyThatCpuAndTheKernelAgrees() throws Exception {
        BitSet before = CpuAffinity.allowed(0);
        int cpu = before.nextSetBit(0);
        AtomicReference<Object> seen = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                int tid = CpuAffinity.currentThreadId();
                BitSet one = new BitSet();
                one.set(cpu);
                CpuAffinity.restrict(0, one);
                String status = Files.readString(Path.of("/proc/self/task/" + tid + "/status"));
                seen.set(new Object[] {CpuAffinity.allowed(0), status});
            } catch (Exception e) {
                seen.set(e);
            }
        });
        t.join();
        assertThat(seen.get()).isInstanceOf(Object[].class);
        Object[] result = (Object[]) seen.get();
        BitSet expected = new BitSet();
        expected.set(cpu);
        assertThat(result[0]).isEqualTo(expected);
        assertThat((String) result[1]).containsPattern("Cpus_allowed_list:\\s+" + cpu + "\\n");
        // another thread's restriction leaves this one's alone
        assertThat(CpuAffinity.allowed(0)).isEqualTo(before);
    }

    @Test
    void threadIdsAreTheKernelsAndDifferPerThread() throws Exception {
        int mine = CpuAffinity.currentThreadId();
        assertThat(Path.of("/proc/self/task/" + mine)).isDirectory();
        int[] other = new int[1];
        Thread t = Thread.ofPlatform().start(() -> other[0] = CpuAffinity.currentThreadId());
        t.join();
        assertThat(other[0]).isPositive().isNotEqualTo(mine);
    }

    @Test
    void anUnknownThreadOrAnEmptySetIsRefused() {
        BitSet zero = new BitSet();
        zero.set(0);
        assertThatThrownBy(() -> CpuAffinity.restrict(Integer.MAX_VALUE, zero))
                .isInstanceOf(PosixException.class)
                .hasMessageContaining("sched_setaffinity");
        assertThatThrownBy(() -> CpuAffinity.restrict(0, new BitSet())).isInstanceOf(IllegalArgumentException.class);
    }
}
