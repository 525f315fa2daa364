package io.kvstore.ffm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class NativeHandleTest {

    /** Each close on a thread of its own (the common pool may have a single thread on a small machine). */
    private static final Executor OWN_THREAD =
            task -> Thread.ofPlatform().daemon().start(task);

    /** Counts releases instead of freeing anything: the base class is what is under test. */
    static final class Counted extends NativeHandle {
        final AtomicInteger releases = new AtomicInteger();

        Counted() {
            super(MemorySegment.ofAddress(0x1234));
        }

        MemorySegment handle() {
            return live();
        }

        @Override
        protected void release(MemorySegment handle) {
            assertThat(handle.address()).isEqualTo(0x1234);
            releases.incrementAndGet();
        }

        @Override
        public String toString() {
            return "counted 0x" + Long.toHexString(handleAddress());
        }
    }

    @Test
    void closingTwiceReleasesOnce() {
        Counted h = new Counted();
        h.close();
        h.close();
        assertThat(h.releases).hasValue(1);
        assertThat(h.isClosed()).isTrue();
    }

    @Test
    void racingClosesReleaseOnce() throws Exception {
        for (int round = 0; round < 200; round++) {
            Counted h = new Counted();
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    h.close();
                }));
            }
            go.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertThat(h.releases).hasValue(1);
        }
    }

    @Test
    void useAfterCloseFailsNamingTheHandle() {
        Counted h = new Counted();
        assertThat(h.handle().address()).isEqualTo(0x1234);
        h.close();
        assertThatThrownBy(h::handle).isInstanceOf(IllegalStateException.class).hasMessage("counted 0x1234 is closed");
    }

    @Test
    void aSecondCloseReturnsOnlyOnceTheFirstReleased() throws Exception {
        CountDownLatch releasing = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        NativeHandle slow = new NativeHandle(MemorySegment.ofAddress(0x1234)) {
            @Override
            protected void release(MemorySegment handle) {
                releasing.countDown();
                try {
                    finish.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        CompletableFuture<Void> first = CompletableFuture.runAsync(slow::close, OWN_THREAD);
        assertThat(releasing.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Void> second = CompletableFuture.runAsync(slow::close, OWN_THREAD);
        try {
            second.get(200, TimeUnit.MILLISECONDS);
            throw new AssertionError("a second close returned while the first was still releasing");
        } catch (TimeoutException expected) {
            // its caller must not free what the handle still uses
        }
        finish.countDown();
        first.get(10, TimeUnit.SECONDS);
        second.get(10, TimeUnit.SECONDS);
        assertThat(slow.isClosed()).isTrue();
    }
}
