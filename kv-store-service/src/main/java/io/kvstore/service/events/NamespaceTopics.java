package io.kvstore.service.events;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * Maps a namespace to the topic its events go out on and to the block size they carry. The topic template
 * names the namespace ({@code {namespace}}), its declared model ({@code {model}}, the namespace's name when
 * undeclared) and this host ({@code {host}}), so a router tells models apart by topic as llm-d does with
 * {@code kv@<pod>@<model>}. What a namespace resolved to is kept, so the removals that follow a namespace's
 * deletion go out on the same topic as its stores. Used by the publisher thread only.
 */
final class NamespaceTopics {

    /**
     * What the publisher needs of a namespace declaration.
     *
     * @param loraName the LoRA adapter the namespace's blocks were computed with, or null
     * @param extraKeys the extra keys hashed into each of its blocks, or null for none
     */
    record Declared(
            String model,
            int blockSize,
            @Nullable String loraName,
            @Nullable List<String> extraKeys) {

        Declared(String model, int blockSize) {
            this(model, blockSize, null, null);
        }
    }

    /** A namespace's topic (UTF-8) and the {@code block_size} of its events. */
    record Resolved(byte[] topic, int blockSize, @Nullable Declared declared) {

        @Nullable
        String loraName() {
            return declared == null ? null : declared.loraName();
        }

        /**
         * vLLM's per-block {@code extra_keys} entry: the LoRA name first, then the declared extra keys (the
         * order of vLLM's {@code generate_block_hash_extra_keys}); null when the namespace declares neither.
         */
        @Nullable
        List<Object> extraKeys() {
            if (declared == null || (declared.loraName() == null && declared.extraKeys() == null)) {
                return null;
            }
            List<Object> keys = new ArrayList<>();
            if (declared.loraName() != null) {
                keys.add(declared.loraName());
            }
            if (declared.extraKeys() != null) {
                keys.addAll(declared.extraKeys());
            }
            return List.copyOf(keys);
        }
    }

    private final String template;
    private final String host;
    private final Function<String, Declared> declarations;
    private final Map<String, Resolved> known = new HashMap<>();
    /** Every topic events have gone out on, kept after its namespace was deleted or declared again. */
    private final Map<String, byte[]> used = new HashMap<>();

    /**
     * @param declarations the namespace's declaration, or null when it is not declared
     */
    NamespaceTopics(String template, String host, Function<String, Declared> declarations) {
        this.template = template;
        this.host = host;
        this.declarations = declarations;
    }

    /**
     * What the namespace resolved to when first seen (or when it was declared after being seen undeclared),
     * until {@link #forget}: the changes being published may have been made under a declaration that has been
     * deleted and replaced since; they go out where the namespace's earlier events did.
     */
    Resolved resolve(String namespace) {
        Resolved cached = known.get(namespace);
        if (cached != null && cached.declared() != null) {
            return cached;
        }
        Declared now = declarations.apply(namespace);
        if (cached != null && now == null) {
            return cached;
        }
        String model = now != null ? now.model() : namespace;
        String topic = template.replace("{namespace}", namespace)
                .replace("{model}", model)
                .replace("{host}", host);
        Resolved r = new Resolved(topic.getBytes(StandardCharsets.UTF_8), now != null ? now.blockSize() : 0, now);
        known.put(namespace, r);
        used.putIfAbsent(topic, r.topic());
        return r;
    }

    /** The namespace was deleted: what comes after its deletion resolves against its declaration then. */
    void forget(String namespace) {
        known.remove(namespace);
    }

    /** After an {@code AllBlocksCleared}: every namespace resolves against its declaration then. */
    void forgetAll() {
        known.clear();
    }

    /** Every topic events have gone out on, for {@code AllBlocksCleared}. */
    Iterable<byte[]> topics() {
        return used.values();
    }
}
