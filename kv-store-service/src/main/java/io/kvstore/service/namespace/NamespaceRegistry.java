package io.kvstore.service.namespace;

import io.kvstore.service.error.ConflictException;
import io.kvstore.service.error.InvalidRequestException;
import io.kvstore.service.error.NotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.json.JsonMapper;

/**
 * The declared namespaces, kept in {@code namespaces.json} under the data directory so that blocks the
 * NVMe tier recovers after a restart still belong to a known layout. Reads are lock-free; declarations
 * and removals are serialised and each rewrites the file atomically (temporary file, then rename).
 */
public final class NamespaceRegistry {

    private static final Logger log = LoggerFactory.getLogger(NamespaceRegistry.class);
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,127}");

    /** What a declaration did. */
    public enum Outcome {
        CREATED,
        UNCHANGED
    }

    private final Path file;
    private final JsonMapper json;
    private final Map<String, NamespaceSpec> specs = new ConcurrentHashMap<>();

    public NamespaceRegistry(Path dataDir, JsonMapper json) {
        this.file = dataDir.resolve("namespaces.json");
        this.json = json;
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
        stored.forEach((name, declaration) -> specs.put(name, declaration.toSpec()));
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
    public synchronized Outcome declare(String name, NamespaceSpec spec) {
        checkName(name);
        NamespaceSpec existing = specs.get(name);
        if (existing != null) {
            if (existing.equals(spec)) {
                return Outcome.UNCHANGED;
            }
            throw new ConflictException("namespace '" + name + "' is already declared as "
                    + NamespaceDeclaration.of(existing) + "; delete it first to change its layout");
        }
        specs.put(name, spec);
        try {
            save();
        } catch (UncheckedIOException e) {
            specs.remove(name);
            throw e;
        }
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

    public synchronized boolean remove(String name) {
        NamespaceSpec removed = specs.remove(name);
        if (removed == null) {
            return false;
        }
        save();
        log.info("namespace {} removed", name);
        return true;
    }

    public Map<String, NamespaceSpec> all() {
        return new TreeMap<>(specs);
    }

    private void save() {
        Map<String, NamespaceDeclaration> out = new TreeMap<>();
        specs.forEach((name, spec) -> out.put(name, NamespaceDeclaration.of(spec)));
        try {
            Files.createDirectories(file.getParent());
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.write(tmp, json.writerWithDefaultPrettyPrinter().writeValueAsBytes(out));
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write namespace declarations to " + file + ": " + e.getMessage(), e);
        }
    }
}
