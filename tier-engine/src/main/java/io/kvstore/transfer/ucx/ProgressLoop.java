package io.kvstore.transfer.ucx;

import io.kvstore.transfer.TransferException;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The thread that owns a UCX worker, its command queue and its wake-up. Other threads only enqueue
 * commands ({@link #execute}, {@link #call}); the loop runs them, then drives its {@link Driver}: it
 * spins on {@link Driver#progress()} while operations are in flight (as ucx_perftest does) and sleeps
 * in {@link Driver#await} when idle, woken by {@link Driver#signal()}. What the loop drives (a UCP
 * worker with its tables) is behind the narrow {@link Driver} interface, so the loop itself knows
 * nothing of UCX.
 */
final class ProgressLoop {

    private static final Logger LOG = LoggerFactory.getLogger(ProgressLoop.class);
    private static final int SPINS_BEFORE_SLEEP = 2_000;
    private static final long TICK_NANOS = 5_000_000;
    private static final long CALL_TIMEOUT_SECONDS = 30;

    /** What the loop drives; every method runs on the loop's thread except {@link #signal()}. */
    interface Driver {
        /** Opens the worker; a failure fails {@link ProgressLoop#started()} and ends the thread. */
        void open() throws Exception;

        /** One {@code ucp_worker_progress}; returns how many events it handled. */
        int progress();

        /** Whether operations are in flight (spin rather than sleep). */
        boolean busy();

        /** Called every few milliseconds of loop time, to expire deadlines. */
        void tick(long nowNanos);

        /** Sleeps until the worker has events or {@code millis} pass. */
        void await(int millis);

        /** Wakes {@link #await} from another thread; does nothing before the worker is open. */
        void signal();

        /** Releases everything once the loop has ended (also after a failed {@link #open()}). */
        void shutdown();
    }

    private final Driver driver;
    private final String name;
    private Thread thread;
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final CompletableFuture<Void> started = new CompletableFuture<>();
    private volatile boolean running = true;
    private long lastTick;

    ProgressLoop(String name, Driver driver) {
        this.driver = driver;
        this.name = name;
    }

    /** Starts the thread, which opens the driver; see {@link #started()}. */
    void start() {
        thread = Thread.ofPlatform().daemon().name(name).start(this::run);
    }

    /** Completes when {@link Driver#open()} has returned, or with its failure. */
    CompletableFuture<Void> started() {
        return started;
    }

    boolean running() {
        return running;
    }

    /**
     * Runs {@code command} on the loop.
     *
     * @throws TransferException when the loop has stopped
     */
    void execute(Runnable command) {
        if (!running) {
            throw new TransferException("UCX engine is closed");
        }
        commands.add(command);
        wake();
    }

    /** Runs {@code command} on the loop's next turn; for callbacks on the loop that may not act at once. */
    void later(Runnable command) {
        commands.add(command);
    }

    /**
     * Runs {@code task} on the loop and waits up to 30 s for its result; its exception is rethrown as
     * is when unchecked, otherwise as a {@link TransferException} naming {@code what}.
     */
    <T> T call(String what, Callable<T> task) {
        CompletableFuture<T> result = new CompletableFuture<>();
        execute(() -> {
            try {
                result.complete(task.call());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
        try {
            return result.get(CALL_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new TransferException("UCX " + what + " failed: " + cause, cause);
        } catch (TimeoutException e) {
            throw new TransferException("UCX " + what + " did not finish within " + CALL_TIMEOUT_SECONDS + " s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransferException("interrupted during UCX " + what);
        }
    }

    /** Ends the loop after the commands queued so far and waits (up to 30 s) for the driver's shutdown. */
    void stop() {
        if (!running) {
            return;
        }
        CompletableFuture<Void> stopped = new CompletableFuture<>();
        commands.add(() -> {
            running = false;
            stopped.complete(null);
        });
        wake();
        try {
            stopped.get(CALL_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            thread.join(TimeUnit.SECONDS.toMillis(CALL_TIMEOUT_SECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            LOG.warn("UCX progress thread did not stop in 30 s", e);
        }
    }

    private void wake() {
        if (Thread.currentThread() != thread) {
            driver.signal();
        }
    }

    private void run() {
        try {
            driver.open();
            started.complete(null);
        } catch (Throwable t) {
            running = false;
            started.completeExceptionally(t);
            driver.shutdown();
            return;
        }
        int idle = 0;
        while (running) {
            Runnable command;
            boolean worked = false;
            while ((command = commands.poll()) != null) {
                runSafely(command);
                worked = true;
            }
            long now = System.nanoTime();
            if (now - lastTick > TICK_NANOS) {
                lastTick = now;
                driver.tick(now);
            }
            if (driver.progress() > 0 || worked) {
                idle = 0;
                continue;
            }
            boolean busy = driver.busy();
            if (busy && ++idle < SPINS_BEFORE_SLEEP) {
                Thread.onSpinWait();
                continue;
            }
            idle = 0;
            if (commands.isEmpty()) {
                driver.await(busy ? 1 : 100);
            }
        }
        driver.shutdown();
    }

    private static void runSafely(Runnable command) {
        try {
            command.run();
        } catch (Throwable t) {
            LOG.error("UCX engine command failed", t);
        }
    }
}
