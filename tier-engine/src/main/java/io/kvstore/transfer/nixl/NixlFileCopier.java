package io.kvstore.transfer.nixl;

import io.kvstore.ffm.UseCount;
import io.kvstore.ffm.nixl.Nixl;
import io.kvstore.ffm.nixl.NixlAgent;
import io.kvstore.ffm.nixl.NixlBackend;
import io.kvstore.ffm.nixl.NixlDescriptor;
import io.kvstore.ffm.nixl.NixlException;
import io.kvstore.ffm.nixl.NixlRegistration;
import io.kvstore.ffm.nixl.NixlTransfer;
import io.kvstore.transfer.TransferException;
import io.kvstore.transfer.TransferSpan;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * Moves spans between a memory region and files through one NIXL agent's storage backend: the device
 * tier's VRAM with {@code GDS} or {@code GDS_MT} (NVMe to and from GPU memory by DMA, the NIXL
 * counterpart of {@link io.kvstore.transfer.local.GdsCopier}), or host memory with {@code POSIX}. The
 * region ({@code VRAM_SEG} or {@code DRAM_SEG}) is registered once, when the copier is made; each file
 * ({@code FILE_SEG}, its descriptor as device id) once, by {@link #register}. One agent serves every
 * file: with GDS a region registration maps the GPU memory for DMA (cuFile's buffer registration), which
 * is done once per region, not once per file. Each {@link #write} or {@link #read} is one NIXL request
 * over the coalesced spans, addressed to the agent itself, polled until done; the agent is created with
 * NIXL's strict thread synchronisation, so requests may come from several threads.
 *
 * <p>The local side of a span is an offset into the region, the remote side an offset into the file,
 * as for {@code GdsCopier}. The copier owns its agent, backend and registrations; closing it
 * deregisters them and destroys the agent.
 *
 * <p>Each move and registration runs inside a use of the copier, counted as the agent counts its native
 * calls: one compare-and-set in unless the copier is closed, one decrement out. A move holds its use from
 * before its transfer is made until NIXL reported it done or failed, across every poll; the agent's own
 * use covers a single native call only, so without this close could deregister the file and the memory and
 * destroy the agent between two polls while the backend still moved the bytes. {@link #close()} refuses
 * new uses ({@link IllegalStateException} "NIXL file copier closed"), waits for those under way, and only
 * then releases what NIXL holds: after it returns, neither the region nor a file is written by this copier.
 */
public final class NixlFileCopier implements AutoCloseable {

    /** A file registered with the copier: its descriptor and size. */
    public record File(int fd, long bytes) {}

    private final NixlAgent agent;
    private final NixlBackend backend;
    private final int memoryType;
    private final MemorySegment region;
    private final Duration timeout;
    private final NixlRegistration memory;
    private final Map<Integer, NixlRegistration> files = new ConcurrentHashMap<>();
    /** The moves and registrations under way. */
    private final UseCount uses = new UseCount();
    /** Opened once the first close destroyed the agent: a later or racing close returns only then. */
    private final CountDownLatch closed = new CountDownLatch(1);

    /**
     * A copier over {@code region}, with no file registered yet.
     *
     * @param backendName {@code GDS}, {@code GDS_MT} or {@code POSIX}
     * @param memoryType {@link Nixl#VRAM_SEG} (device memory, GDS backends) or {@link Nixl#DRAM_SEG}
     * @param deviceId the GPU ordinal of VRAM, 0 for host memory
     * @throws IllegalStateException when NIXL is unavailable, naming why
     * @throws NixlException when the backend cannot be created or the memory not registered
     */
    public NixlFileCopier(
            String agentName,
            String backendName,
            int memoryType,
            MemorySegment region,
            long deviceId,
            Duration timeout) {
        if (!Nixl.availability().available()) {
            throw new IllegalStateException(
                    "NIXL file copier unavailable: " + Nixl.availability().detail());
        }
        this.memoryType = memoryType;
        this.region = region;
        this.timeout = timeout;
        this.agent = Nixl.get().createAgent(agentName, new NixlAgent.Config(false, 0));
        NixlBackend created = null;
        try {
            created = agent.createBackend(backendName, Map.of());
            this.memory = agent.register(
                    memoryType, List.of(new NixlDescriptor(region.address(), region.byteSize(), deviceId)), created);
        } catch (RuntimeException e) {
            if (created != null) {
                created.close();
            }
            agent.close();
            throw e;
        }
        this.backend = created;
    }

    /** The backend moving the bytes ({@code GDS}, {@code GDS_MT}, {@code POSIX}). */
    public String backend() {
        return backend.plugin();
    }

    /** The name of the one NIXL agent behind every file of this copier. */
    public String agentName() {
        return agent.name();
    }

    /**
     * Registers the open file {@code fd} of {@code bytes} bytes with this copier's agent; a descriptor
     * already registered is not registered again.
     *
     * @throws NixlException when NIXL refuses the file
     * @throws IllegalStateException once the copier is closed
     */
    public File register(int fd, long bytes) {
        enter();
        try {
            files.computeIfAbsent(
                    fd, d -> agent.register(Nixl.FILE_SEG, List.of(new NixlDescriptor(0, bytes, d)), backend));
        } finally {
            exit();
        }
        return new File(fd, bytes);
    }

    /** How many files are registered. */
    public int files() {
        return files.size();
    }

    /**
     * Writes each span of the region (local offset) into the file at the span's remote offset; returns bytes.
     *
     * @throws IllegalStateException once the copier is closed (nothing moved)
     */
    public long write(File file, List<TransferSpan> spans) {
        return move(Nixl.XFER_WRITE, file, spans);
    }

    /**
     * Reads each span from the file at its remote offset into the region at its local offset; returns bytes.
     *
     * @throws IllegalStateException once the copier is closed (nothing moved)
     */
    public long read(File file, List<TransferSpan> spans) {
        return move(Nixl.XFER_READ, file, spans);
    }

    private long move(int operation, File file, List<TransferSpan> spans) {
        enter();
        try {
            return moveInUse(operation, file, spans);
        } finally {
            exit();
        }
    }

    /** {@link #move} inside a use of the copier: its file, region and agent stay until the transfer ended. */
    private long moveInUse(int operation, File file, List<TransferSpan> spans) {
        if (!files.containsKey(file.fd())) {
            throw new IllegalArgumentException(
                    "file descriptor " + file.fd() + " is not registered with NIXL agent " + agent.name());
        }
        List<TransferSpan> merged = TransferSpan.coalesce(spans);
        List<NixlDescriptor> local = new ArrayList<>(merged.size());
        List<NixlDescriptor> remote = new ArrayList<>(merged.size());
        long bytes = 0;
        long deviceId = memory.descriptors().getFirst().deviceId();
        for (TransferSpan s : merged) {
            if (s.localOffset() + s.length() > region.byteSize() || s.remoteOffset() + s.length() > file.bytes()) {
                throw new IllegalArgumentException("span " + s + " lies outside the region (" + region.byteSize()
                        + " bytes) or the file (" + file.bytes() + " bytes)");
            }
            local.add(new NixlDescriptor(region.address() + s.localOffset(), s.length(), deviceId));
            remote.add(new NixlDescriptor(s.remoteOffset(), s.length(), file.fd()));
            bytes += s.length();
        }
        String what = (operation == Nixl.XFER_WRITE ? "write" : "read") + " of " + bytes + " bytes in " + merged.size()
                + " span(s) over NIXL " + backend.plugin();
        long deadline = System.nanoTime() + timeout.toNanos();
        try (NixlTransfer transfer = agent.createTransfer(
                operation, memoryType, local, Nixl.FILE_SEG, remote, agent.name(), backend, null)) {
            boolean done = transfer.post();
            while (!done) {
                if (System.nanoTime() > deadline) {
                    throw new TransferException("NIXL " + what + " timed out after " + timeout + " (NIXL cannot cancel"
                            + " a transfer in flight; it " + letGo(transfer) + ", and only then was this reported)");
                }
                Thread.onSpinWait();
                done = transfer.isDone();
            }
        } catch (NixlException e) {
            throw new TransferException("NIXL " + what + " failed: " + e.getMessage(), e);
        }
        return bytes;
    }

    /**
     * Waits until NIXL reports {@code transfer} finished or failed, and says which: releasing it earlier
     * would not stop it (NIXL only forgets the request), so the region and the file would keep changing
     * after the caller was told the transfer is over. A local file transfer always ends.
     */
    private static String letGo(NixlTransfer transfer) {
        try {
            while (!transfer.isDone()) {
                Thread.onSpinWait();
            }
            return "finished";
        } catch (NixlException e) {
            return "failed (" + e.getMessage() + ")";
        }
    }

    /** Begins a use of the copier; fails once {@link #close()} began. */
    private void enter() {
        if (!uses.tryEnter()) {
            throw new IllegalStateException("NIXL file copier closed: " + agent.name());
        }
    }

    /** Ends a use begun by {@link #enter()}. */
    private void exit() {
        uses.exit();
    }

    /**
     * Refuses new moves and registrations, waits for those under way, then deregisters the files and the
     * region and destroys the agent; later and racing calls do nothing but wait until that is done, so that
     * whichever close returns, its caller may free the region. The wait is bounded by the moves' own: each gives
     * up polling at its timeout and then only waits for NIXL to end its transfer, which a local file transfer
     * always does (NIXL cannot cancel one, and releasing the memory under it would let it write freed memory).
     */
    @Override
    public void close() {
        if (!uses.closeAndAwait()) {
            awaitClosed();
            return;
        }
        try {
            files.values().forEach(NixlRegistration::close);
            files.clear();
            memory.close();
            backend.close();
        } finally {
            try {
                agent.close();
            } finally {
                closed.countDown();
            }
        }
    }

    private void awaitClosed() {
        boolean interrupted = false;
        while (true) {
            try {
                closed.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true; // the region must not be freed before the agent let go of it: wait on
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
