package io.kvstore.service.cluster;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A local copy of every key under one etcd prefix, kept by a watch and checked by a full read on every
 * {@link #resync()}. The watch makes changes arrive within milliseconds; the resync is the safety net for
 * what a watch can lose (a compacted revision, an etcd restart, a stream that stopped silently), so the
 * copy is never more than one resync period behind etcd.
 */
final class PrefixMirror implements AutoCloseable {

    /**
     * Told of the whole copy after every change, with each key's create revision (a key deleted and put again
     * has a new one, even with the same value) and the etcd revision the copy reflects.
     */
    interface Listener {
        void changed(Map<String, byte[]> entries, Map<String, Long> created, long revision);
    }

    private static final Logger log = LoggerFactory.getLogger(PrefixMirror.class);

    private final Client etcd;
    private final String prefix;
    private final ByteSequence prefixKey;
    private final Listener listener;
    private final long timeoutMillis;
    private final Map<String, byte[]> entries = new TreeMap<>();
    private final Map<String, Long> created = new TreeMap<>();
    private final Object notifyLock = new Object();
    /** The etcd revision the copy reflects. */
    private long revision;
    /** The revision of the last full read taken into the copy: watch events up to it are already there. */
    private long readAt;

    private Watch.Watcher watcher;
    private boolean closed;

    PrefixMirror(Client etcd, String prefix, Listener listener, long timeoutMillis) {
        this.etcd = etcd;
        this.prefix = prefix;
        this.prefixKey = bytes(prefix);
        this.listener = listener;
        this.timeoutMillis = timeoutMillis;
    }

    /**
     * Reads the prefix, tells the listener if anything differs from the copy, and (re)starts the watch
     * when it is not running. Throws when etcd cannot be read; the copy is then left as it was.
     */
    void resync() throws Exception {
        var response = etcd.getKVClient()
                .get(prefixKey, GetOption.builder().isPrefix(true).build())
                .get(timeoutMillis, TimeUnit.MILLISECONDS);
        Map<String, byte[]> fresh = new TreeMap<>();
        Map<String, Long> freshCreated = new TreeMap<>();
        for (KeyValue kv : response.getKvs()) {
            fresh.put(name(kv), kv.getValue().getBytes());
            freshCreated.put(name(kv), kv.getCreateRevision());
        }
        long rev = response.getHeader().getRevision();
        boolean differs;
        synchronized (this) {
            if (closed) {
                return;
            }
            // a running watch delivered changes newer than this read meanwhile: the copy is the newer one (a
            // stopped watch is not trusted: etcd may have lost its data and started counting again)
            boolean watchAhead = watcher != null && rev < revision;
            differs = !watchAhead && !(sameEntries(fresh) && created.equals(freshCreated));
            if (differs) {
                if (watcher != null) {
                    log.info("etcd {}: a full read found changes the watch had not delivered", prefix);
                }
                entries.clear();
                entries.putAll(fresh);
                created.clear();
                created.putAll(freshCreated);
            }
            revision = watcher == null ? rev : Math.max(revision, rev);
            if (!watchAhead) {
                readAt = rev;
            }
            if (watcher == null) {
                watcher = etcd.getWatchClient()
                        .watch(
                                prefixKey,
                                WatchOption.builder()
                                        .isPrefix(true)
                                        .withRevision(rev + 1)
                                        .build(),
                                Watch.listener(this::onWatch, this::onWatchError));
            }
        }
        if (differs) {
            notifyListener();
        }
    }

    private void onWatch(WatchResponse response) {
        boolean changed = false;
        synchronized (this) {
            if (closed) {
                return;
            }
            for (WatchEvent event : response.getEvents()) {
                KeyValue kv = event.getKeyValue();
                // judged against the last full read, not against the revision the copy has reached: the events
                // of one transaction share their revision, and all of them are to be applied
                if (kv.getModRevision() <= readAt) {
                    continue; // already in the copy, read in full at a later revision
                }
                String name = name(kv);
                if (event.getEventType() == WatchEvent.EventType.DELETE) {
                    changed |= entries.remove(name) != null;
                    created.remove(name);
                } else if (event.getEventType() == WatchEvent.EventType.PUT) {
                    byte[] value = kv.getValue().getBytes();
                    byte[] before = entries.put(name, value);
                    Long createdBefore = created.put(name, kv.getCreateRevision());
                    changed |= before == null
                            || !Arrays.equals(before, value)
                            || createdBefore == null
                            || createdBefore != kv.getCreateRevision();
                }
                revision = Math.max(revision, kv.getModRevision());
            }
        }
        if (changed) {
            notifyListener();
        }
    }

    private void onWatchError(Throwable error) {
        log.warn("etcd {}: watch ended ({}); the next resync restarts it", prefix, error.toString());
        synchronized (this) {
            if (watcher != null) {
                watcher.close();
                watcher = null;
            }
        }
    }

    private void notifyListener() {
        // one notification at a time, each with the newest copy, so a listener never sees an older one last
        synchronized (notifyLock) {
            Map<String, byte[]> copy;
            Map<String, Long> createdCopy;
            long rev;
            synchronized (this) {
                copy = new TreeMap<>(entries);
                createdCopy = new TreeMap<>(created);
                rev = revision;
            }
            listener.changed(copy, createdCopy, rev);
        }
    }

    private boolean sameEntries(Map<String, byte[]> fresh) {
        if (!fresh.keySet().equals(entries.keySet())) {
            return false;
        }
        for (var e : fresh.entrySet()) {
            if (!Arrays.equals(e.getValue(), entries.get(e.getKey()))) {
                return false;
            }
        }
        return true;
    }

    private String name(KeyValue kv) {
        return kv.getKey().toString(StandardCharsets.UTF_8).substring(prefix.length());
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (watcher != null) {
            watcher.close();
            watcher = null;
        }
    }
}
