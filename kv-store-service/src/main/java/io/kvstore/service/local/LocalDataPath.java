package io.kvstore.service.local;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.service.error.TransportUnavailableException;
import java.nio.file.Path;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The same-host data path's state: which file holds the DRAM tier (local engines map it), how long it is,
 * and a region id that changes with every start, so a client still mapping the file of an earlier run
 * notices (the id in each reserve and lease answer differs from its mapping's) and maps the new one.
 * The wiring attaches the tier when {@code kvstore.local.enabled} put it in a shared file; otherwise the
 * path stays unavailable with the reason and engines use HTTP or the one-sided transport.
 */
public final class LocalDataPath {

    private static final Logger log = LoggerFactory.getLogger(LocalDataPath.class);

    /** The tier local engines map. */
    public static final String TIER = "DRAM";

    private final String regionId = UUID.randomUUID().toString();
    private volatile @Nullable Path file;
    private volatile long length;
    private volatile @Nullable String group;
    private volatile @Nullable Path controlSocket;
    private volatile String unavailableReason;

    /** What {@code GET /v1/local} answers. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record View(
            boolean available,
            @Nullable String reason,
            @Nullable String regionId,
            @Nullable String tier,
            @Nullable String path,
            @Nullable Long length,
            @Nullable String group,
            @Nullable String controlSocket) {}

    public LocalDataPath(String unavailableReason) {
        this.unavailableReason = unavailableReason;
    }

    /** Publishes the DRAM tier's shared file: {@code length} bytes, mappable by the owner and {@code group}. */
    public void attach(Path file, long length, @Nullable String group) {
        this.file = file;
        this.length = length;
        this.group = group;
        log.info(
                "same-host data path: local engines map the {} MiB {} tier at {} ({})",
                length >> 20,
                TIER,
                file,
                group == null ? "owner only" : "owner and group " + group);
    }

    /** Publishes the local control socket (null: none, clients use HTTP). */
    public void controlSocket(@Nullable Path socket) {
        this.controlSocket = socket;
    }

    /** The tier's file, or null while the path is off. */
    public @Nullable Path file() {
        return file;
    }

    /** The group that may map the file besides its owner, or null for the owner only. */
    public @Nullable String group() {
        return group;
    }

    /** Records why the path is off (e.g. the DRAM tier is not host memory). */
    public void unavailable(String reason) {
        this.unavailableReason = reason;
        log.info("same-host data path unavailable: {}", reason);
    }

    public boolean available() {
        return file != null;
    }

    /** @throws TransportUnavailableException with the reason when the tier is not shared */
    public void requireAvailable() {
        if (!available()) {
            throw new TransportUnavailableException(unavailableReason);
        }
    }

    public String regionId() {
        return regionId;
    }

    public View view() {
        Path f = file;
        if (f == null) {
            return new View(false, unavailableReason, null, null, null, null, null, null);
        }
        Path socket = controlSocket;
        return new View(
                true, null, regionId, TIER, f.toString(), length, group, socket == null ? null : socket.toString());
    }
}
