package io.kvstore.ffm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class LazyBindingTest {

    @Test
    void loadsOnFirstUseAndOnlyOnce() {
        AtomicInteger loads = new AtomicInteger();
        LazyBinding<String> binding = LazyBinding.of(() -> {
            loads.incrementAndGet();
            return new LazyBinding.Loaded<>("handles", "libdemo 1.0 at /opt");
        });
        assertThat(loads).hasValue(0);
        assertThat(binding.get()).isEqualTo("handles");
        assertThat(binding.availability()).isEqualTo(Availability.available("libdemo 1.0 at /opt"));
        assertThat(binding.get()).isEqualTo("handles");
        assertThat(loads).hasValue(1);
    }

    @Test
    void aMissingLibraryIsUnavailableWithWhereItWasLookedFor() {
        LazyBinding<Object> binding = LazyBinding.of(() -> {
            NativeLibrary.load(
                    "libkvstore-absent", List.of(java.nio.file.Path.of("/nonexistent")), List.of("libabsent.so"));
            throw new AssertionError("loaded a library that does not exist");
        });
        assertThat(binding.availability().available()).isFalse();
        assertThat(binding.availability().detail())
                .contains("libkvstore-absent not found", "/nonexistent/libabsent.so");
        assertThatThrownBy(binding::get)
                .isInstanceOf(LibraryUnavailableException.class)
                .hasMessageContaining("libkvstore-absent not found");
    }

    @Test
    void aMissingSymbolIsUnavailableNamingTheSymbol() {
        LazyBinding<Object> binding = LazyBinding.of(() -> new LazyBinding.Loaded<>(
                NativeLibrary.libc().function("kvstore_no_such_symbol", java.lang.foreign.FunctionDescriptor.ofVoid()),
                "never"));
        assertThat(binding.availability().detail()).contains("lacks symbol kvstore_no_such_symbol");
    }
}
