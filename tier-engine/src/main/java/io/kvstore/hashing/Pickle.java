package io.kvstore.hashing;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * What CPython's {@code pickle.dumps(x, protocol=5)} writes for the values vLLM hashes: {@code None},
 * {@code int}, {@code str}, {@code bytes} and tuples of these (a Java {@code List} is written as a
 * tuple, which is what vLLM builds). Byte for byte equal to the C pickler of CPython 3.8 and later,
 * checked against Python itself by {@code PickleTest}.
 *
 * <p>The parts of the protocol that matter here, as the C pickler ({@code Modules/_pickle.c}) does them:
 * <ul>
 *   <li>{@code PROTO 5}, then the payload in {@code FRAME}s: a frame is committed when it holds at
 *       least 64 KiB at the start of the next object, and a frame under 4 bytes is written without
 *       its header. {@code bytes} or {@code str} data of 64 KiB or more is written outside any frame.
 *   <li>Integers: {@code BININT1} (0..255), {@code BININT2} (..65535), {@code BININT} (signed 32-bit),
 *       else {@code LONG1} with the shortest two's-complement little-endian bytes.
 *   <li>{@code str} as UTF-8 with {@code SHORT_BINUNICODE}/{@code BINUNICODE}/{@code BINUNICODE8}; {@code
 *       bytes} with {@code SHORT_BINBYTES}/{@code BINBYTES}/{@code BINBYTES8}; tuples of 1 to 3 with
 *       {@code TUPLE1..3}, longer ones between {@code MARK} and {@code TUPLE}, the empty one as
 *       {@code EMPTY_TUPLE}. Every {@code str}, {@code bytes} and non-empty tuple is memoized ({@code
 *       MEMOIZE}); ints and {@code None} are not.
 *   <li>The memo is by object identity, so an object met twice is written as {@code BINGET}. The
 *       objects vLLM hashes are distinct except where CPython shares them behind the scenes: the empty
 *       string, one-character strings below U+0100, and {@code bytes} of length 0 or 1 are singletons.
 *       Those are the only values this writer treats as "the same object" when equal.
 * </ul>
 *
 * <p>Instances are reusable (one per thread): {@link #reset} starts a new pickle in the same buffer.
 */
final class Pickle {

    static final int PROTO = 0x80;
    static final int FRAME = 0x95;
    static final int STOP = '.';
    static final int NONE = 'N';
    static final int BININT = 'J';
    static final int BININT1 = 'K';
    static final int BININT2 = 'M';
    static final int LONG1 = 0x8a;
    static final int SHORT_BINUNICODE = 0x8c;
    static final int BINUNICODE = 'X';
    static final int BINUNICODE8 = 0x8d;
    static final int SHORT_BINBYTES = 'C';
    static final int BINBYTES = 'B';
    static final int BINBYTES8 = 0x8e;
    static final int EMPTY_TUPLE = ')';
    static final int MARK = '(';
    static final int TUPLE = 't';
    static final int TUPLE1 = 0x85;
    static final int MEMOIZE = 0x94;
    static final int BINGET = 'h';
    static final int LONG_BINGET = 'j';

    /** A frame is committed once it holds this many bytes; larger str/bytes data bypasses frames. */
    static final int FRAME_SIZE_TARGET = 64 * 1024;

    private static final int FRAME_HEADER = 9;
    private static final int FRAME_SIZE_MIN = 4;

    byte[] buf = new byte[512];
    int pos;
    private boolean framing;
    private int frameStart = -1;
    private int memoSize;
    private Object[] singletons = new Object[4];
    private int[] singletonMemo = new int[4];
    private int singletonCount;

    /** Starts a new pickle; with {@code framing} as {@link #dumps} does, without for a fragment. */
    Pickle reset(boolean framing, int memoBase) {
        pos = 0;
        this.framing = framing;
        frameStart = -1;
        memoSize = memoBase;
        singletonCount = 0;
        return this;
    }

    /** {@code pickle.dumps(value, protocol=5)}. */
    static byte[] dumps(Object value) {
        Pickle p = new Pickle().reset(false, 0);
        p.header();
        p.save(value);
        p.finish();
        return Arrays.copyOf(p.buf, p.pos);
    }

    /** Writes {@code PROTO 5} and turns framing on, as the C pickler's {@code dump} does. */
    void header() {
        ensure(2);
        frameStart = -1;
        buf[pos++] = (byte) PROTO;
        buf[pos++] = 5;
        framing = true;
    }

    /** Writes {@code STOP} and commits the last frame. */
    void finish() {
        put(STOP);
        commitFrame();
        framing = false;
    }

    /** Ends a tuple of {@code n} (1 to 3) elements saved one by one after its start. */
    void closeTuple(int n) {
        put(TUPLE1 + n - 1);
        memoize(null, false);
    }

    void save(Object value) {
        opcodeBoundary();
        switch (value) {
            case null -> put(NONE);
            case Integer i -> saveInt(i);
            case Long l -> saveInt(l);
            case String s -> saveString(s);
            case byte[] b -> saveBytes(b);
            case List<?> list -> saveTuple(list);
            default ->
                throw new IllegalArgumentException(
                        "no pickle encoding for a " + value.getClass().getName());
        }
    }

    void saveInt(long v) {
        if (v >= 0 && v <= 0xFF) {
            open(2);
            buf[pos++] = (byte) BININT1;
            buf[pos++] = (byte) v;
        } else if (v >= 0 && v <= 0xFFFF) {
            open(3);
            buf[pos++] = (byte) BININT2;
            buf[pos++] = (byte) v;
            buf[pos++] = (byte) (v >>> 8);
        } else if (v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
            open(5);
            buf[pos++] = (byte) BININT;
            putIntLe((int) v);
        } else {
            // shortest two's complement, little-endian: as many bytes as the bit length needs, plus a sign bit
            int bits = 64 - Long.numberOfLeadingZeros(v < 0 ? ~v : v);
            int n = bits / 8 + 1;
            open(2 + n);
            buf[pos++] = (byte) LONG1;
            buf[pos++] = (byte) n;
            for (int i = 0; i < n; i++) {
                buf[pos++] = (byte) (v >> (8 * i));
            }
        }
    }

    private void saveString(String s) {
        if (memoGet(s)) {
            return;
        }
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        if (utf8.length < 256) {
            open(2 + utf8.length);
            buf[pos++] = (byte) SHORT_BINUNICODE;
            buf[pos++] = (byte) utf8.length;
            System.arraycopy(utf8, 0, buf, pos, utf8.length);
            pos += utf8.length;
        } else {
            writeLarge(BINUNICODE, utf8); // a Java array is under 4 GiB: BINUNICODE8 is never needed
        }
        memoize(s, s.length() == 0 || (s.length() == 1 && s.charAt(0) < 0x100));
    }

    void saveBytes(byte[] b) {
        if (memoGet(b)) {
            return;
        }
        if (b.length < 256) {
            open(2 + b.length);
            buf[pos++] = (byte) SHORT_BINBYTES;
            buf[pos++] = (byte) b.length;
            System.arraycopy(b, 0, buf, pos, b.length);
            pos += b.length;
        } else {
            writeLarge(BINBYTES, b);
        }
        memoize(b, b.length <= 1);
    }

    private void saveTuple(List<?> list) {
        int n = list.size();
        if (n == 0) {
            put(EMPTY_TUPLE);
            return;
        }
        if (n > 3) {
            put(MARK);
        }
        for (Object element : list) {
            save(element);
        }
        put(n > 3 ? TUPLE : TUPLE1 + n - 1);
        memoize(null, false);
    }

    /**
     * The tuple of {@code count} ints from {@code tokens[from]}, as {@link #save} writes a {@code List}
     * of them; the ids are non-negative.
     */
    void saveTokenTuple(int[] tokens, int from, int count) {
        opcodeBoundary();
        if (count > 3) {
            put(MARK);
        }
        int i = from;
        int end = from + count;
        while (i < end) {
            // tokens that cannot bring the frame to its target before they are written need no check
            ensureFrame();
            int room = framing ? (FRAME_SIZE_TARGET - (pos - frameStart)) / 5 : Integer.MAX_VALUE;
            if (room <= 0) {
                opcodeBoundary();
                ensureFrame();
                room = 1;
            }
            int stop = (int) Math.min(end, (long) i + room);
            ensure(5 * (stop - i));
            byte[] b = buf;
            int p = pos;
            for (; i < stop; i++) {
                int t = tokens[i];
                if (t <= 0xFF) {
                    b[p] = (byte) BININT1;
                    b[p + 1] = (byte) t;
                    p += 2;
                } else if (t <= 0xFFFF) {
                    b[p] = (byte) BININT2;
                    b[p + 1] = (byte) t;
                    b[p + 2] = (byte) (t >>> 8);
                    p += 3;
                } else {
                    b[p] = (byte) BININT;
                    b[p + 1] = (byte) t;
                    b[p + 2] = (byte) (t >>> 8);
                    b[p + 3] = (byte) (t >>> 16);
                    b[p + 4] = (byte) (t >>> 24);
                    p += 5;
                }
            }
            pos = p;
        }
        put(count > 3 ? TUPLE : TUPLE1 + count - 1);
        memoize(null, false);
    }

    /** The bytes written since {@link #reset}: a fragment when unframed, a pickle after {@link #finish}. */
    byte[] toBytes() {
        return Arrays.copyOf(buf, pos);
    }

    private void writeLarge(int opcode, byte[] data) {
        boolean bypass = data.length >= FRAME_SIZE_TARGET;
        boolean wasFraming = framing;
        if (bypass) {
            commitFrame();
            framing = false;
        }
        if (opcode == BINUNICODE || opcode == BINBYTES) {
            open(5);
            buf[pos++] = (byte) opcode;
            putIntLe(data.length);
        } else {
            open(9);
            buf[pos++] = (byte) opcode;
            putLongLe(data.length);
        }
        ensure(data.length);
        System.arraycopy(data, 0, buf, pos, data.length);
        pos += data.length;
        framing = wasFraming;
    }

    /** If {@code value} is a singleton already written, writes {@code BINGET} for it. */
    private boolean memoGet(Object value) {
        for (int i = 0; i < singletonCount; i++) {
            Object seen = singletons[i];
            boolean same = value instanceof String s
                    ? s.equals(seen)
                    : seen instanceof byte[] sb && Arrays.equals((byte[]) value, sb);
            if (same) {
                int index = singletonMemo[i];
                if (index < 256) {
                    open(2);
                    buf[pos++] = (byte) BINGET;
                    buf[pos++] = (byte) index;
                } else {
                    open(5);
                    buf[pos++] = (byte) LONG_BINGET;
                    putIntLe(index);
                }
                return true;
            }
        }
        return false;
    }

    private void memoize(Object value, boolean singleton) {
        put(MEMOIZE);
        if (singleton) {
            if (singletonCount == singletons.length) {
                singletons = Arrays.copyOf(singletons, 2 * singletonCount);
                singletonMemo = Arrays.copyOf(singletonMemo, 2 * singletonCount);
            }
            singletons[singletonCount] = value;
            singletonMemo[singletonCount++] = memoSize;
        }
        memoSize++;
    }

    /** Commits the current frame when it has reached the target size, as before every object. */
    private void opcodeBoundary() {
        if (framing && frameStart >= 0 && pos - frameStart >= FRAME_SIZE_TARGET) {
            commitFrame();
        }
    }

    /** Starts a frame (reserving its header) if framing is on and none is open. */
    private void ensureFrame() {
        if (framing && frameStart < 0) {
            ensure(FRAME_HEADER);
            pos += FRAME_HEADER;
            frameStart = pos;
        }
    }

    private void commitFrame() {
        if (!framing || frameStart < 0) {
            return;
        }
        int length = pos - frameStart;
        int header = frameStart - FRAME_HEADER;
        if (length >= FRAME_SIZE_MIN) {
            buf[header] = (byte) FRAME;
            for (int i = 0; i < 8; i++) {
                buf[header + 1 + i] = (byte) ((long) length >>> (8 * i));
            }
        } else {
            System.arraycopy(buf, frameStart, buf, header, length);
            pos -= FRAME_HEADER;
        }
        frameStart = -1;
    }

    private void put(int opcode) {
        open(1);
        buf[pos++] = (byte) opcode;
    }

    /** Makes room for {@code n} more bytes, in a frame when framing is on. */
    private void open(int n) {
        ensureFrame();
        ensure(n);
    }

    private void putIntLe(int v) {
        buf[pos++] = (byte) v;
        buf[pos++] = (byte) (v >>> 8);
        buf[pos++] = (byte) (v >>> 16);
        buf[pos++] = (byte) (v >>> 24);
    }

    private void putLongLe(long v) {
        for (int i = 0; i < 8; i++) {
            buf[pos++] = (byte) (v >>> (8 * i));
        }
    }

    private void ensure(int more) {
        if (pos + more > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(pos + more, 2 * buf.length));
        }
    }
}
