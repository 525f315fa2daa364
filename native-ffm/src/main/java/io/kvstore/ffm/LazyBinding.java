package io.kvstore.ffm;

import java.util.function.Supplier;

/**
 * A library binding loaded on first use, once, with the answer to "can it be used here?" kept beside
 * it. The loader finds the library and every symbol; when it fails with a
 * {@link LibraryUnavailableException} (library absent, symbol missing, native access not enabled) the
 * binding stays unavailable with that reason, and nothing else in the JVM is affected. Each binding
 * ({@code Ucp}, {@code CudaRuntime}, {@code CuFile}, {@code IsaL}) holds one of these in a static field.
 *
 * @param <T> the loaded binding (its downcall handles)
 */
public final class LazyBinding<T> {

    /** What a successful load yields: the binding and the availability detail (version, location). */
    public record Loaded<T>(T binding, String detail) {}

    private record State<T>(T binding, Availability availability) {}

    private final Supplier<Loaded<T>> loader;
    private volatile State<T> state;

    private LazyBinding(Supplier<Loaded<T>> loader) {
        this.loader = loader;
    }

    /**
     * A binding that runs {@code loader} on the first call to {@link #availability()} or {@link #get()}.
     * The loader reports unavailability by throwing {@link LibraryUnavailableException}.
     */
    public static <T> LazyBinding<T> of(Supplier<Loaded<T>> loader) {
        return new LazyBinding<>(loader);
    }

    /** Whether the library loaded with every symbol, with its detail, or the reason it did not. */
    public Availability availability() {
        return state().availability();
    }

    /**
     * The loaded binding.
     *
     * @throws LibraryUnavailableException with the reason when it is not available
     */
    public T get() {
        State<T> s = state();
        if (s.binding() == null) {
            throw new LibraryUnavailableException(s.availability().detail());
        }
        return s.binding();
    }

    private State<T> state() {
        State<T> s = state;
        if (s == null) {
            synchronized (this) {
                s = state;
                if (s == null) {
                    s = load();
                    state = s;
                }
            }
        }
        return s;
    }

    private State<T> load() {
        try {
            Loaded<T> loaded = loader.get();
            return new State<>(loaded.binding(), Availability.available(loaded.detail()));
        } catch (LibraryUnavailableException e) {
            return new State<>(null, Availability.unavailable(e.getMessage()));
        } catch (IllegalCallerException e) {
            return new State<>(
                    null,
                    Availability.unavailable("native access is not enabled; start the JVM with "
                            + "--enable-native-access=ALL-UNNAMED (" + e.getMessage() + ")"));
        }
    }
}
