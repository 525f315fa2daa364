package io.kvstore.ffm;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * One loaded shared library and the single place its functions are looked up. Bindings load their
 * library once, find every symbol through {@link #function}, and turn a failure into an
 * {@link Availability} with the reason, so a missing library never crashes the JVM.
 */
public final class NativeLibrary {

    private static final Linker LINKER = Linker.nativeLinker();

    private final String name;
    private final String location;
    private final SymbolLookup lookup;

    private NativeLibrary(String name, String location, SymbolLookup lookup) {
        this.name = name;
        this.location = location;
        this.lookup = lookup;
    }

    /** The C library of this process, always present. */
    public static NativeLibrary libc() {
        return new NativeLibrary("libc", "default lookup", LINKER.defaultLookup());
    }

    /**
     * Loads the first of {@code fileNames} found in {@code dirs} (in order), then through the system
     * loader's usual paths. The library stays loaded for the life of the JVM.
     *
     * @throws LibraryUnavailableException naming every place that was tried
     */
    public static NativeLibrary load(String name, List<Path> dirs, List<String> fileNames) {
        List<String> tried = new ArrayList<>();
        for (Path dir : dirs) {
            for (String file : fileNames) {
                Path candidate = dir.resolve(file);
                tried.add(candidate.toString());
                if (Files.isRegularFile(candidate)) {
                    return open(name, candidate.toString(), tried);
                }
            }
        }
        for (String file : fileNames) {
            tried.add(file + " (system loader paths)");
            try {
                return new NativeLibrary(name, file, SymbolLookup.libraryLookup(file, Arena.global()));
            } catch (IllegalArgumentException notFound) {
                // try the next name
            } catch (IllegalCallerException noNativeAccess) {
                throw new LibraryUnavailableException(name + ": native access is not enabled; start the JVM with "
                        + "--enable-native-access=ALL-UNNAMED");
            }
        }
        throw new LibraryUnavailableException(name + " not found; tried " + String.join(", ", tried));
    }

    private static NativeLibrary open(String name, String path, List<String> tried) {
        try {
            return new NativeLibrary(name, path, SymbolLookup.libraryLookup(Path.of(path), Arena.global()));
        } catch (IllegalArgumentException e) {
            throw new LibraryUnavailableException(name + " at " + path + " could not be loaded: "
                    + loaderError(Path.of(path)).orElse(e.getMessage()));
        } catch (IllegalCallerException noNativeAccess) {
            throw new LibraryUnavailableException(name + ": native access is not enabled; start the JVM with "
                    + "--enable-native-access=ALL-UNNAMED");
        }
    }

    /**
     * What the dynamic loader says about {@code path} (dlerror after a failed dlopen): it names the
     * dependency that is missing or the symbol that did not resolve, where the JDK only says "Cannot
     * open library". Empty when dlopen succeeds here or dlerror has nothing to say.
     */
    public static Optional<String> loaderError(Path path) {
        Linker linker = LINKER;
        var lookup = linker.defaultLookup();
        var dlopen = lookup.find("dlopen");
        var dlerror = lookup.find("dlerror");
        var dlclose = lookup.find("dlclose");
        if (dlopen.isEmpty() || dlerror.isEmpty() || dlclose.isEmpty()) {
            return Optional.empty();
        }
        try (Arena arena = Arena.ofConfined()) {
            MethodHandle open = linker.downcallHandle(
                    dlopen.get(),
                    FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
            MethodHandle error = linker.downcallHandle(dlerror.get(), FunctionDescriptor.of(ValueLayout.ADDRESS));
            MethodHandle close = linker.downcallHandle(
                    dlclose.get(), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            MemorySegment handle = (MemorySegment) open.invokeExact(arena.allocateFrom(path.toString()), RTLD_NOW);
            if (!MemorySegment.NULL.equals(handle)) {
                int unused = (int) close.invokeExact(handle);
                return Optional.empty();
            }
            MemorySegment message = (MemorySegment) error.invokeExact();
            return MemorySegment.NULL.equals(message)
                    ? Optional.empty()
                    : Optional.of(message.reinterpret(4096).getString(0));
        } catch (Throwable t) {
            return Optional.empty();
        }
    }

    /** dlopen(3) flag: resolve every symbol now, so a missing one is reported here. */
    private static final int RTLD_NOW = 2;

    /** Directories named by a path-list property or variable (colon-separated), skipping blanks. */
    public static List<Path> dirsFrom(String... pathLists) {
        List<Path> dirs = new ArrayList<>();
        for (String list : pathLists) {
            if (list == null || list.isBlank()) {
                continue;
            }
            for (String part : list.split(java.io.File.pathSeparator)) {
                if (!part.isBlank()) {
                    dirs.add(Path.of(part.trim()));
                }
            }
        }
        return dirs;
    }

    /**
     * A downcall handle for a required symbol.
     *
     * @throws LibraryUnavailableException when the symbol is missing, naming library and symbol
     */
    public MethodHandle function(String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return optionalFunction(symbol, descriptor, options)
                .orElseThrow(
                        () -> new LibraryUnavailableException(name + " at " + location + " lacks symbol " + symbol));
    }

    /** A downcall handle for a symbol that older versions of the library may lack. */
    public Optional<MethodHandle> optionalFunction(
            String symbol, FunctionDescriptor descriptor, Linker.Option... options) {
        return lookup.find(symbol).map(address -> LINKER.downcallHandle(address, descriptor, options));
    }

    public String name() {
        return name;
    }

    /** Where the library was loaded from (a path, or the bare file name the system loader resolved). */
    public String location() {
        return location;
    }

    public static Linker linker() {
        return LINKER;
    }
}
