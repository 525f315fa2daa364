package io.kvstore.ffm.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.LibraryUnavailableException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

class CudaRuntimeTest {

    @Test
    void availabilityExplainsItselfAndNeverCrashes() {
        var availability = CudaRuntime.availability();
        System.out.println("CUDA runtime: " + availability);
        assertThat(availability.detail()).isNotBlank();
        if (!availability.available()) {
            assertThat(availability.detail()).containsAnyOf("libcudart", "cudaGetDeviceCount");
            assertThatThrownBy(CudaRuntime::get).isInstanceOf(LibraryUnavailableException.class)
                    .hasMessage(availability.detail());
        }
    }

    @Test
    void pinnedHostMemoryIsWritableFromJava() {
        assumeTrue(CudaRuntime.availability().available(), () -> "skipped: " + CudaRuntime.availability());
        assumeTrue(CudaRuntime.get().deviceCount() > 0, "skipped: no CUDA device");
        CudaRuntime cuda = CudaRuntime.get();
        MemorySegment pinned = cuda.hostAlloc(1 << 20, CudaRuntime.HOST_ALLOC_PORTABLE_MAPPED);
        try {
            pinned.set(ValueLayout.JAVA_LONG, 8, 0x1234_5678_9ABC_DEF0L);
            assertThat(pinned.get(ValueLayout.JAVA_LONG, 8)).isEqualTo(0x1234_5678_9ABC_DEF0L);
        } finally {
            cuda.freeHost(pinned);
        }
    }

    @Test
    void deviceMemoryAllocatesAndFrees() {
        assumeTrue(CudaRuntime.availability().available(), () -> "skipped: " + CudaRuntime.availability());
        assumeTrue(CudaRuntime.get().deviceCount() > 0, "skipped: no CUDA device");
        CudaRuntime cuda = CudaRuntime.get();
        MemorySegment device = cuda.malloc(1 << 20);
        assertThat(device.address()).isNotZero();
        cuda.free(device);
        assertThatThrownBy(() -> cuda.malloc(Long.MAX_VALUE / 2)).isInstanceOf(CudaException.class)
                .hasMessageContaining("cudaMalloc");
    }
}
