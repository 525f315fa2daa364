package io.kvstore.ffm.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.kvstore.ffm.LibraryUnavailableException;
import io.kvstore.ffm.cuda.CudaRuntime.CopyKind;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class CudaRuntimeTest {

    private static void assumeGpu() {
        assumeTrue(CudaRuntime.availability().available(), () -> "skipped: " + CudaRuntime.availability());
        assumeTrue(CudaRuntime.get().deviceCount() > 0, "skipped: libcudart loaded but no CUDA device");
    }

    private static long crc(MemorySegment segment) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asByteBuffer());
        return crc.getValue();
    }

    private static void fill(MemorySegment segment, long seed) {
        long x = seed;
        for (long i = 0; i < segment.byteSize(); i += 8) {
            x ^= x << 13;
            x ^= x >>> 7;
            x ^= x << 17;
            segment.set(ValueLayout.JAVA_LONG_UNALIGNED, i, x);
        }
    }

    @BeforeEach
    void printAvailability() {
        System.out.println("CUDA runtime: " + CudaRuntime.availability());
    }

    @Test
    void unavailableRuntimeNamesEveryPlaceItLooked() {
        var availability = CudaRuntime.availability();
        assertThat(availability.detail()).isNotBlank();
        if (availability.available()) {
            assertThat(availability.detail())
                    .contains("libcudart at")
                    .contains("runtime")
                    .contains("device(s)");
            return;
        }
        if (availability.detail().contains("not found")) {
            for (var dir : CudaRuntime.searchDirs()) {
                assertThat(availability.detail())
                        .contains(dir.resolve("libcudart.so").toString());
            }
            assertThat(availability.detail())
                    .contains("/usr/local/cuda/lib64/libcudart.so")
                    .contains("libcudart.so.12 (system loader paths)");
        } else {
            // found, but unusable: the message names the library it loaded and the failing call or symbol
            assertThat(availability.detail())
                    .contains("libcudart")
                    .containsAnyOf(
                            "lacks symbol",
                            "loaded, but cudaGetDeviceCount() failed: cudaError",
                            "could not be loaded");
        }
        assertThatThrownBy(CudaRuntime::get)
                .isInstanceOf(LibraryUnavailableException.class)
                .hasMessage(availability.detail());
    }

    @Test
    void pinnedHostMemoryIsWritableFromJava() {
        assumeGpu();
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
    void deviceRoundTripPreservesEveryByte() {
        assumeGpu();
        CudaRuntime cuda = CudaRuntime.get();
        long bytes = 16L << 20;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment source = arena.allocate(bytes, 4096);
            MemorySegment back = arena.allocate(bytes, 4096);
            fill(source, 42);
            MemorySegment device = cuda.malloc(bytes);
            try {
                cuda.memcpy(device, source, bytes, CopyKind.HOST_TO_DEVICE);
                cuda.memcpy(back, device, bytes, CopyKind.DEVICE_TO_HOST);
            } finally {
                cuda.free(device);
            }
            assertThat(crc(back)).isEqualTo(crc(source));
        }
    }

    @Test
    void asyncCopiesOnAStreamOfRegisteredMemoryCompleteAtTheEvent() {
        assumeGpu();
        CudaRuntime cuda = CudaRuntime.get();
        long bytes = 8L << 20;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment host = arena.allocate(bytes, 4096);
            MemorySegment back = arena.allocate(bytes, 4096);
            fill(host, 7);
            cuda.hostRegister(host, CudaRuntime.HOST_REGISTER_PORTABLE);
            cuda.hostRegister(back, CudaRuntime.HOST_REGISTER_PORTABLE);
            MemorySegment device = cuda.malloc(bytes);
            try (CudaStream stream = cuda.createStream(CudaRuntime.STREAM_NON_BLOCKING);
                    CudaEvent start = cuda.createEvent(CudaRuntime.EVENT_DEFAULT);
                    CudaEvent end = cuda.createEvent(CudaRuntime.EVENT_DEFAULT)) {
                start.record(stream);
                cuda.memcpyAsync(device, host, bytes, CopyKind.HOST_TO_DEVICE, stream);
                cuda.memcpyAsync(back, device, bytes, CopyKind.DEVICE_TO_HOST, stream);
                end.record(stream);
                end.synchronize();
                assertThat(end.isComplete()).isTrue();
                assertThat(stream.isIdle()).isTrue();
                assertThat(end.millisSince(start)).isPositive();
            } finally {
                cuda.free(device);
                cuda.hostUnregister(host);
                cuda.hostUnregister(back);
            }
            assertThat(crc(back)).isEqualTo(crc(host));
        }
    }

    @Test
    void propertiesDescribeEveryDevice() {
        assumeGpu();
        CudaRuntime cuda = CudaRuntime.get();
        for (int d = 0; d < cuda.deviceCount(); d++) {
            CudaDeviceProperties p = cuda.properties(d);
            System.out.println(p);
            assertThat(p.name()).isNotBlank();
            assertThat(p.computeMajor()).isGreaterThanOrEqualTo(3);
            assertThat(p.totalMemory()).isGreaterThan(p.freeMemory()).isPositive();
            assertThat(p.multiprocessors()).isPositive();
        }
    }

    @Test
    void failedCallNamesTheCallAndTheCudaError() {
        assumeGpu();
        CudaRuntime cuda = CudaRuntime.get();
        assertThatThrownBy(() -> cuda.malloc(Long.MAX_VALUE / 2))
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("cudaMalloc(" + Long.MAX_VALUE / 2 + ")")
                .hasMessageContaining("cudaErrorMemoryAllocation")
                .satisfies(e -> assertThat(((CudaException) e).status()).isEqualTo(2));
        assertThatThrownBy(() -> cuda.setDevice(cuda.deviceCount() + 5))
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("cudaErrorInvalidDevice");
        assertThat(cuda.errorName(1)).isEqualTo("cudaErrorInvalidValue");
    }
}
