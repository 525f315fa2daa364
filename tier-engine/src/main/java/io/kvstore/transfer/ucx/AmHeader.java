package io.kvstore.transfer.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import io.kvstore.ffm.ucx.Ucp;
import java.lang.foreign.MemorySegment;

/**
 * The active-message protocol between two engines, written and parsed here and nowhere else.
 *
 * <p>Four messages. {@link #WRITE} carries a chunk's bytes as its data; {@link #READ} asks for them;
 * both carry a 24-byte request header: the sender's op id, the remote address, the length (8 bytes
 * each, native byte order, read unaligned). The server answers a WRITE with {@link #WRITE_ACK} (no
 * data) and a READ with {@link #READ_REPLY} (the bytes as data); both carry a 16-byte reply header:
 * the op id being answered and a {@code ucs_status_t} (4 bytes, then 4 bytes of padding). A header
 * shorter than its kind's length is not a message of this protocol: {@link #request} and
 * {@link #reply} answer null and the handler drops it.
 *
 * <p>What UCX passes beside the header, the {@code ucp_am_recv_param_t}, is parsed by {@link #params}:
 * whether the data is a rendezvous descriptor still to be fetched and the endpoint to answer on.
 */
final class AmHeader {

    /** Active-message ids. */
    static final int WRITE = 11;

    static final int WRITE_ACK = 12;
    static final int READ = 13;
    static final int READ_REPLY = 14;

    /** Bytes of a WRITE or READ header: op id, remote address, length. */
    static final long REQUEST_BYTES = 24;
    /** Bytes of a WRITE_ACK or READ_REPLY header: op id, status, padding. */
    static final long REPLY_BYTES = 16;

    /** A WRITE or READ: {@code length} bytes at {@code address} in the server's registered memory. */
    record Request(long opId, long address, long length) {}

    /** A WRITE_ACK or READ_REPLY for the sender's operation {@code opId}. */
    record Reply(long opId, int status) {}

    /** What UCX said about a received message: rendezvous data to fetch, and the endpoint to reply on. */
    record Params(boolean rendezvous, MemorySegment replyEndpoint) {
        boolean canReply() {
            return replyEndpoint.address() != 0;
        }
    }

    private AmHeader() {}

    /** The request in a received header, or null when it is too short to be one. */
    static Request request(MemorySegment header, long headerLength) {
        if (headerLength < REQUEST_BYTES) {
            return null;
        }
        MemorySegment h = header.reinterpret(headerLength);
        return new Request(
                h.get(JAVA_LONG_UNALIGNED, 0), h.get(JAVA_LONG_UNALIGNED, 8), h.get(JAVA_LONG_UNALIGNED, 16));
    }

    /** The reply in a received header, or null when it is too short to be one. */
    static Reply reply(MemorySegment header, long headerLength) {
        if (headerLength < REPLY_BYTES) {
            return null;
        }
        MemorySegment h = header.reinterpret(headerLength);
        return new Reply(h.get(JAVA_LONG_UNALIGNED, 0), h.get(JAVA_INT_UNALIGNED, 8));
    }

    /** A received message's {@code ucp_am_recv_param_t}. */
    static Params params(MemorySegment param) {
        MemorySegment p = param.reinterpret(16);
        long attr = p.get(JAVA_LONG, 0);
        MemorySegment replyEp = (attr & Ucp.AM_RECV_ATTR_REPLY_EP) != 0 ? p.get(ADDRESS, 8) : MemorySegment.NULL;
        return new Params((attr & Ucp.AM_RECV_ATTR_FLAG_RNDV) != 0, replyEp);
    }

    /** Writes {@code request} into {@code into} (at least 24 bytes, 8-aligned); returns the header to send. */
    static MemorySegment write(Request request, MemorySegment into) {
        into.set(JAVA_LONG, 0, request.opId());
        into.set(JAVA_LONG, 8, request.address());
        into.set(JAVA_LONG, 16, request.length());
        return into.asSlice(0, REQUEST_BYTES);
    }

    /** Writes {@code reply} into {@code into} (at least 16 bytes, 8-aligned); returns the header to send. */
    static MemorySegment write(Reply reply, MemorySegment into) {
        into.set(JAVA_LONG, 0, reply.opId());
        into.set(JAVA_INT, 8, reply.status());
        into.set(JAVA_INT, 12, 0);
        return into.asSlice(0, REPLY_BYTES);
    }
}
