package io.kvstore.service.namespace;

import io.kvstore.service.config.DurableFiles;
import io.kvstore.service.error.ConflictException;
import io.kvstore.service.error.InsufficientStorageException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.NotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

/**
 * The declared namespaces, kept in {@code namespaces.json} under the data directory so that blocks the
 * NVMe tier recovers after a restart still belong to a known layout. Reads are lock-free; declarations
 * and removals are serialised and each rewrites the file atomically and durably ({@link DurableFiles})
 * before the change is visible: when the file cannot be written (a full disk) the change is refused with
 * 507 and nothing changed, in memory or after a restart. Each namespace belongs to the tenant that declared
 * it.
 *
 * <p>Writes into a namespace (stores, reservations, commits) go through {@link #beginWrite}, and its delete through
 * {@link #beginDelete}, which refuses new writes and waits out those in progress before the blocks are deleted: a
 * write racing the delete lands before it and goes with the namespace, or is refused; it is never kept under a name
 * no declaration owns, nor in the next declaration of the name. Each declaration has its own count ({@code
 * WriteGate}); no lock is shared between namespaces or taken by a write.
 *
 * <p>In cluster mode the etcd create revision each declaration was applied from is kept beside it, in {@code
 * namespace-revisions.json}, not in {@code namespaces.json}: the previous release reads that file with a mapper
 * that refuses unknown fields, so a field added there would stop a node rolled back from starting.
 *
 * <p>That release reads {@code namespaces.json} and writes it, and never {@code namespace-revisions.json}: rolled
 * back, a node can delete a namespace and declare it anew through the API (etcd creates it again, at a later
 * revision, and blocks are stored in it), to the byte as it was; rolled forward, the revision left beside it is the
 * deleted declaration's, and the next sync took the namespace for one declared anew while this node missed the
 * delete, and dropped its blocks. So the revisions file holds, under {@value #STAMP} (no namespace's name), a
 * stamp of {@code namespaces.json} as this release last wrote it: its bytes, modification time and file key (each
 * write is a new file, renamed into place). Read back with another stamp, or none (written by the release before
 * the stamp), the revisions are not used: each namespace takes etcd's create revision at the next sync, as a node
 * did before revisions were kept. A revision is therefore trusted only for the declarations this release wrote; a
 * namespace declared anew elsewhere while such a node was down keeps its old blocks there once, after a rollback.
 */
public final class NamespaceRegistry {

    private static final Logger log = LoggerFactory.getLogger(NamespaceRegistry.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,127}");
    /** The key of the stamp of {@code namespaces.json} in {@code namespace-revisions.json} (see the class comment). */
    static final String STAMP = "#namespaces.json";

    /** What a declaration did. */
    public enum Outcome {
        CREATED,
        UNCHANGED
    }

    private final Path file;
    /** The cluster revisions ({@link #clusterRevision}), apart from the declarations (see the class comment). */
    private final Path revisionsFile;

    private final JsonMapper json;
    private final long maxBlockBytes;
    private final String slabSetting;
    private final Map<String, NamespaceSpec> specs = new ConcurrentHashMap<>();
    private final Map<String, String> owners = new ConcurrentHashMap<>();
    /**
     * Per declaration, its writes in progress, which its delete waits out ({@link #beginWrite}, {@link
     * #beginDelete}).
     */
    private final Map<String, WriteGate> gates = new ConcurrentHashMap<>();
    /** Per namespace applied from a cluster's settings: etcd's create revision of that declaration. */
    private final Map<String, Long> clusterRevisions = new ConcurrentHashMap<>();
    /**
     * Namespaces not declared whose revision {@code namespace-revisions.json} may still hold (its rewrite after a
     * removal failed, or the node stopped in between); guarded by this registry's monitor.
     */
    private final Set<String> staleRevisions = new HashSet<>();

    /**
     * @param maxBlockBytes the largest block every tier can hold (its smallest slab size)
     * @param slabSetting the property that sets that limit, named when a layout exceeds it
     */
    public NamespaceRegistry(Path dataDir, JsonMapper json, long maxBlockBytes, String slabSetting) {
        this.file = dataDir.resolve("namespaces.json");
        this.revisionsFile = dataDir.resolve("namespace-revisions.json");
        this.json = json;
        this.maxBlockBytes = maxBlockBytes;
        this.slabSetting = slabSetting;
        load();
    }

    private void load() {
        if (!Files.exists(file)) {
            return;
        }
        Map<String, NamespaceDeclaration> stored;
        try {
            stored = json.readValue(file.toFile(), new TypeReference<Map<String, NamespaceDeclaration>>() {});
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "cannot read namespace declarations from " + file + ": " + e.getMessage(), e);
        }
        stored.forEach((name, declaration) -> {
            gates.put(name, new WriteGate());
            specs.put(name, declaration.toSpec());
            if (declaration.tenant() != null) {
                owners.put(name, declaration.tenant());
            }
        });
        if (Files.exists(revisionsFile)) {
            Map<String, Long> revisions;
            try {
                revisions = json.readValue(revisionsFile.toFile(), new TypeReference<Map<String, Long>>() {});
            } catch (RuntimeException e) {
                throw new IllegalStateException(
                        "cannot read namespace cluster revisions from " + revisionsFile + ": " + e.getMessage(), e);
            }
            Long stamp = revisions.remove(STAMP);
            boolean current = stamp != null && stamp.equals(declarationsStamp());
            if (!current && !revisions.isEmpty()) {
                log.info(
                        "{} does not belong to {} as it is now (written since by another release, or not stamped): "
                                + "the cluster revisions of {} are not used; each takes etcd's at the next sync",
                        revisionsFile,
                        file,
                        new TreeMap<>(revisions).keySet());
            }
            revisions.forEach((name, revision) -> {
                if (current && specs.containsKey(name)) {
                    clusterRevisions.put(name, revision);
                } else {
                    // removed, and the node stopped before the revision went; or not this declaration's revision
                    staleRevisions.add(name);
                }
            });
        }
        if (!staleRevisions.isEmpty()) {
            try {
                saveRevisions(new TreeMap<>(clusterRevisions));
            } catch (InsufficientStorageException e) {
                log.warn("revisions of removed namespaces stay in {} until it can be written", revisionsFile);
            }
        }
        log.info("{} namespace(s) declared before restart: {}", specs.size(), new TreeMap<>(specs).keySet());
    }

    /** Refuses a name that is empty, too long or has characters other than letters, digits and {@code . _ : -}. */
    public static void checkName(String name) {
        if (name == null || !NAME.matcher(name).matches()) {
            throw new InvalidRequestException(
                    "namespace",
                    "namespace '" + name + "' is not valid: 1 to 128 letters, "
                            + "digits, '.', '_', ':' or '-', starting with a letter or digit");
        }
    }

    /**
     * Declares {@code name} with {@code spec}; declaring it again with the same spec changes nothing.
     *
     * @throws ConflictException when it is already declared with another layout or hash scheme
     */
    public Outcome declare(String name, NamespaceSpec spec, String tenant) {
        return declare(name, spec, tenant, () -> {});
    }

    /**
     * As {@link #declare(String, NamespaceSpec, String)}, running {@code beforeCreating} when the name is not
     * declared, right before the new declaration is recorded and in one step with it: no other declaration of the
     * name, and so no write through one, comes between (the caller drops what is left under the name there).
     */
    public synchronized Outcome declare(String name, NamespaceSpec spec, String tenant, Runnable beforeCreating) {
        checkName(name);
        if (spec.blockBytes() > maxBlockBytes) {
            throw new InvalidNamespaceException(
                    "layout",
                    "layout gives blocks of " + spec.blockBytes() + " bytes; the tiers hold blocks of at most "
                            + maxBlockBytes + " bytes (" + slabSetting + ")");
        }
        NamespaceSpec existing = specs.get(name);
        if (existing != null) {
            if (existing.equals(spec)) {
                return Outcome.UNCHANGED;
            }
            throw new ConflictException("namespace '" + name + "' is already declared as "
                    + NamespaceDeclaration.of(existing) + "; delete it first to change its layout");
        }
        beforeCreating.run();
        forgetClusterRevision(name); // a new declaration: not (yet) applied from a cluster's settings
        Map<String, NamespaceDeclaration> next = declarations();
        next.put(name, NamespaceDeclaration.of(spec, tenant));
        save(next);
        if (tenant != null) {
            owners.put(name, tenant);
        }
        gates.put(name, new WriteGate()); // before the spec: a write of this declaration finds its gate
        specs.put(name, spec);
        restamp();
        log.info(
                "namespace {} declared: {} blocks of {} bytes, {}",
                name,
                spec.model(),
                spec.blockBytes(),
                spec.hashScheme().wireName());
        return Outcome.CREATED;
    }

    /** The namespace's spec; 404 when it is not declared. */
    public NamespaceSpec require(String name) {
        NamespaceSpec spec = specs.get(name);
        if (spec == null) {
            throw new NotFoundException("namespace '" + name + "' is not declared");
        }
        return spec;
    }

    /** The namespace's spec as declared now, or null when it is not declared. */
    public @Nullable NamespaceSpec declared(String name) {
        return specs.get(name);
    }

    /** The tenant that declared the namespace, or null (declared before tenants, or not declared). */
    public String owner(String name) {
        return owners.get(name);
    }

    /**
     * Removes the declaration, on disk first: when that fails (507) it stays declared, its cluster revision too. The
     * revision goes after the declaration; left on disk (that write failed, or the node stopped in between), it is
     * one of an undeclared namespace, which {@link #load} does not read back and a declaration anew drops first.
     */
    public synchronized boolean remove(String name) {
        if (!specs.containsKey(name)) {
            return false;
        }
        Map<String, NamespaceDeclaration> next = declarations();
        next.remove(name);
        save(next);
        WriteGate gate = gates.remove(name);
        if (gate != null) {
            gate.close(); // for good: a write that found it before it went is refused
        }
        specs.remove(name);
        owners.remove(name);
        if (clusterRevisions.remove(name) != null) {
            staleRevisions.add(name);
        }
        restamp();
        log.info("namespace {} removed", name);
        return true;
    }

    /** A write into a namespace in progress ({@link #beginWrite}); closing it ends it. */
    public interface Write extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Begins a write into {@code name} as declared with {@code spec} (an uploaded block from its namespace check to
     * its publication, a reservation's admission, a commit), which a delete of the namespace waits for before it
     * deletes its blocks. Null when the namespace is not declared with {@code spec} now (deleted, or declared anew)
     * or is being deleted: the write must not happen. Lock-free and allocation-free: one compare-and-set on the
     * declaration's own count.
     */
    public @Nullable Write beginWrite(String name, NamespaceSpec spec) {
        WriteGate gate = gates.get(name);
        if (gate == null || !gate.enter()) {
            return null;
        }
        if (specs.get(name) != spec) {
            gate.leave();
            return null;
        }
        return gate.admitted;
    }

    /**
     * The delete of a namespace under way ({@link #beginDelete}): no write begins in it, none is in progress.
     * {@link #remove()} ends it with the declaration removed; closed without, the namespace takes writes again.
     */
    public final class Deletion implements AutoCloseable {

        private final String name;
        private final WriteGate gate;
        private boolean removed;

        private Deletion(String name, WriteGate gate) {
            this.name = name;
            this.gate = gate;
        }

        /** Removes the declaration, as {@link NamespaceRegistry#remove(String)}; the namespace takes no write again. */
        public void remove() {
            NamespaceRegistry.this.remove(name);
            removed = true;
        }

        @Override
        public void close() {
            if (!removed) {
                gate.open();
            }
        }
    }

    /**
     * Refuses new writes into {@code name} ({@link #beginWrite}) and waits up to {@code wait} for those in progress to
     * end, so that every block written into it is there when its blocks are deleted next.
     *
     * @throws NotFoundException when it is not declared
     * @throws ConflictException when another delete of it is under way, or writes are still in progress after {@code
     *     wait} (then it takes writes again)
     */
    public Deletion beginDelete(String name, java.time.Duration wait) {
        WriteGate gate = gates.get(name);
        if (gate == null) {
            throw new NotFoundException("namespace '" + name + "' is not declared");
        }
        if (!gate.close()) {
            throw new ConflictException("namespace '" + name + "' is being deleted by another request");
        }
        if (!gate.drained(System.nanoTime() + wait.toNanos())) {
            gate.open();
            throw new ConflictException("namespace '" + name + "': stores into it still in progress after " + wait
                    + "; delete again once they end");
        }
        return new Deletion(name, gate);
    }

    /**
     * etcd's create revision of the cluster declaration this node's declaration of {@code name} was applied from
     * (kept across restarts), or null: not declared, declared here through the API since, or not in cluster mode.
     */
    public @Nullable Long clusterRevision(String name) {
        return clusterRevisions.get(name);
    }

    /**
     * Records (on disk first: 507 when it cannot be written) that this node's declaration of {@code name} is the
     * cluster's declaration created at etcd revision {@code revision}; nothing when it is not declared.
     */
    public synchronized void recordClusterRevision(String name, long revision) {
        if (!specs.containsKey(name) || Long.valueOf(revision).equals(clusterRevisions.get(name))) {
            return;
        }
        Map<String, Long> next = new TreeMap<>(clusterRevisions);
        next.put(name, revision);
        saveRevisions(next);
        clusterRevisions.put(name, revision);
    }

    /**
     * Drops the revision of a declaration about to be made anew, on disk before the declarations change: a stale one
     * read back after a restart would take the new declaration for a deleted one, and drop its blocks.
     */
    private void forgetClusterRevision(String name) {
        if (clusterRevisions.containsKey(name) || staleRevisions.contains(name)) {
            Map<String, Long> next = new TreeMap<>(clusterRevisions);
            next.remove(name);
            saveRevisions(next);
            clusterRevisions.remove(name);
        }
    }

    public Map<String, NamespaceSpec> all() {
        return new TreeMap<>(specs);
    }

    private Map<String, NamespaceDeclaration> declarations() {
        Map<String, NamespaceDeclaration> out = new TreeMap<>();
        specs.forEach((name, spec) -> out.put(name, NamespaceDeclaration.of(spec, owners.get(name))));
        return out;
    }

    private void save(Map<String, NamespaceDeclaration> declarations) {
        write(file, json.writerWithDefaultPrettyPrinter().writeValueAsBytes(declarations));
    }

    /**
     * Writes {@code revisions}, which hold no undeclared namespace's, stamped with {@code namespaces.json} as it is
     * now: the file then holds no stale revision either.
     */
    private void saveRevisions(Map<String, Long> revisions) {
        Map<String, Long> stamped = new TreeMap<>(revisions);
        Long stamp = declarationsStamp();
        if (stamp != null) {
            stamped.put(STAMP, stamp);
        }
        write(revisionsFile, json.writerWithDefaultPrettyPrinter().writeValueAsBytes(stamped));
        staleRevisions.clear();
    }

    /**
     * Stamps {@code namespace-revisions.json} anew after {@code namespaces.json} was written, so that its revisions
     * are still used after a restart; when that fails, they are not (the safe side: etcd's are taken again).
     */
    private void restamp() {
        if (!Files.exists(revisionsFile)) {
            return;
        }
        try {
            saveRevisions(new TreeMap<>(clusterRevisions));
        } catch (InsufficientStorageException e) {
            log.warn(
                    "{} is not stamped with {} as written now: its cluster revisions are not used after a restart "
                            + "(those of removed namespaces {} stay in it until it can be written)",
                    revisionsFile,
                    file,
                    staleRevisions);
        }
    }

    /**
     * The stamp of {@code namespaces.json} as it is on disk now: 64 bits of the SHA-256 of its bytes, modification
     * time and file key. Null when it cannot be read (then revisions written with it are not used after a restart).
     */
    private @Nullable Long declarationsStamp() {
        try {
            BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(Files.readAllBytes(file));
            sha.update(("\n" + attributes.lastModifiedTime().toInstant() + "\n" + attributes.fileKey())
                    .getBytes(StandardCharsets.UTF_8));
            return ByteBuffer.wrap(sha.digest()).getLong();
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            log.warn("cannot stamp the cluster revisions with {}: {}", file, e.toString());
            return null;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private void write(Path to, byte[] bytes) {
        try {
            DurableFiles.replace(to, bytes);
        } catch (IOException e) {
            log.warn("namespace change refused: cannot write {}: {}", to, e.toString());
            throw new InsufficientStorageException(
                    "the namespace change was not made: cannot write " + to.getFileName() + " (" + e + ")", e);
        }
    }
}
