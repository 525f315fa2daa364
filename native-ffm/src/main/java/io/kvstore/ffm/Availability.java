package io.kvstore.ffm;

/**
 * Whether a native library can be used here, with its version when it can and the precise reason
 * when it cannot. Every binding answers with one of these instead of failing at class-load time.
 *
 * @param available true when the library was found and every required symbol resolved
 * @param detail the version (when available) or the reason it is not (library not found where,
 *     symbol missing, native access not enabled)
 */
public record Availability(boolean available, String detail) {

    public static Availability available(String version) {
        return new Availability(true, version);
    }

    public static Availability unavailable(String reason) {
        return new Availability(false, reason);
    }

    @Override
    public String toString() {
        return available ? "available (" + detail + ")" : "unavailable: " + detail;
    }
}
