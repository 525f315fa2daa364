package io.kvstore.service.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.kvstore.service.namespace.NamespaceDeclaration;
import io.kvstore.service.namespace.NamespaceSpec;
import java.util.List;

/** A declared namespace as the API shows it: its declaration in canonical form and the sizes it implies. */
public record NamespaceView(
        String namespace,
        String model,
        NamespaceDeclaration.Layout layout,
        String hashScheme,
        String durability,
        String tenant,
        int blockBytes,
        int hashBytes,
        @JsonInclude(JsonInclude.Include.NON_NULL) String lora,
        @JsonInclude(JsonInclude.Include.NON_NULL) List<String> extraKeys) {

    public static NamespaceView of(String name, NamespaceSpec spec) {
        return of(name, spec, null);
    }

    public static NamespaceView of(String name, NamespaceSpec spec, String tenant) {
        var d = NamespaceDeclaration.of(spec, tenant);
        return new NamespaceView(
                name,
                d.model(),
                d.layout(),
                d.hashScheme(),
                d.durability(),
                tenant,
                spec.blockBytes(),
                spec.hashBytes(),
                spec.lora(),
                spec.extraKeys());
    }
}
