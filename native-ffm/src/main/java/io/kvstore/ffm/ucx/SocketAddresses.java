package io.kvstore.ffm.ucx;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.InetSocketAddress;

/** {@code struct sockaddr_in} in native memory for UCX's client-server calls (IPv4, Linux layout). */
final class SocketAddresses {

    /** sizeof(struct sockaddr_in). */
    static final int SOCKADDR_IN_BYTES = 16;

    private static final short AF_INET = 2;

    private SocketAddresses() {}

    /** {@code sin_family}, {@code sin_port} (network order), {@code sin_addr}, zero padding. */
    static MemorySegment sockaddrIn(InetSocketAddress address, Arena arena) {
        if (address.isUnresolved() || !(address.getAddress() instanceof Inet4Address v4)) {
            throw new IllegalArgumentException(
                    "UCX listener and client addresses must be resolved IPv4, got " + address);
        }
        MemorySegment s = arena.allocate(SOCKADDR_IN_BYTES, 8);
        s.set(JAVA_SHORT, 0, AF_INET);
        s.set(JAVA_BYTE, 2, (byte) (address.getPort() >>> 8));
        s.set(JAVA_BYTE, 3, (byte) address.getPort());
        byte[] ip = v4.getAddress();
        for (int i = 0; i < 4; i++) {
            s.set(JAVA_BYTE, 4 + i, ip[i]);
        }
        return s;
    }

    /** The port of a sockaddr_in or sockaddr_in6 (both keep it in bytes 2-3, network order). */
    static int port(MemorySegment sockaddr) {
        return ((sockaddr.get(JAVA_BYTE, 2) & 0xff) << 8) | (sockaddr.get(JAVA_BYTE, 3) & 0xff);
    }
}
