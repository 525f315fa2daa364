package io.kvstore.service.quota;

import java.util.Locale;

/** Byte counts as people read them in refusals: {@code 1 GiB}, {@code 1.5 MiB}, {@code 4096 bytes}. */
final class Sizes {

    private Sizes() {}

    static String human(long bytes) {
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        if (bytes < 1024) {
            return bytes + " bytes";
        }
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return (v == Math.rint(v) ? String.valueOf((long) v) : String.format(Locale.ROOT, "%.1f", v)) + " " + units[u];
    }
}
