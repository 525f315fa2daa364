package io.kvstore.transfer.ucx;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

import io.kvstore.ffm.ucx.Ucp;
import io.kvstore.ffm.ucx.UcpStatus;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class AmHeaderTest {

    private final Arena arena = Arena.ofConfined();

    @AfterEach
    void close() {
        arena.close();
    }

    @Test
    void aRequestReadsBackAsWritten() {
        MemorySegment into = arena.allocate(32, 8);
        AmHeader.Request sent = new AmHeader.Request(42, 0x7f00_1234_5000L, 8L << 20);
        MemorySegment header = AmHeader.write(sent, into);
        assertThat(header.byteSize()).isEqualTo(AmHeader.REQUEST_BYTES);
        assertThat(AmHeader.request(header, header.byteSize())).isEqualTo(sent);
    }

    @Test
    void aReplyReadsBackAsWrittenWithItsStatus() {
        MemorySegment into = arena.allocate(32, 8);
        AmHeader.Reply sent = new AmHeader.Reply(7, UcpStatus.ERR_INVALID_ADDR);
        MemorySegment header = AmHeader.write(sent, into);
        assertThat(header.byteSize()).isEqualTo(AmHeader.REPLY_BYTES);
        assertThat(AmHeader.reply(header, header.byteSize())).isEqualTo(sent);
    }

    @Test
    void headersAreReadAtAnyAlignment() {
        // UCX hands the header inside its receive buffer, with no alignment promised
        MemorySegment buffer = arena.allocate(64, 8);
        MemorySegment aligned = arena.allocate(32, 8);
        AmHeader.Request sent = new AmHeader.Request(-1, 3, 4096);
        MemorySegment.copy(AmHeader.write(sent, aligned), 0, buffer, 3, AmHeader.REQUEST_BYTES);
        assertThat(AmHeader.request(buffer.asSlice(3), AmHeader.REQUEST_BYTES)).isEqualTo(sent);
    }

    @Test
    void aHeaderTooShortForItsKindIsNotAMessage() {
        MemorySegment header = AmHeader.write(new AmHeader.Request(1, 2, 3), arena.allocate(32, 8));
        assertThat(AmHeader.request(header, AmHeader.REQUEST_BYTES - 1)).isNull();
        assertThat(AmHeader.request(header, 0)).isNull();
        assertThat(AmHeader.reply(header, AmHeader.REPLY_BYTES - 1)).isNull();
    }

    @Test
    void aLongerHeaderIsReadByItsFirstFields() {
        MemorySegment header = arena.allocate(48, 8);
        AmHeader.write(new AmHeader.Request(9, 10, 11), header);
        assertThat(AmHeader.request(header, 48)).isEqualTo(new AmHeader.Request(9, 10, 11));
    }

    @Test
    void receiveParamsGiveRendezvousAndReplyEndpoint() {
        MemorySegment param = arena.allocate(16, 8);
        param.set(JAVA_LONG, 0, Ucp.AM_RECV_ATTR_REPLY_EP | Ucp.AM_RECV_ATTR_FLAG_RNDV);
        param.set(ADDRESS, 8, MemorySegment.ofAddress(0xabc0));
        AmHeader.Params p = AmHeader.params(param);
        assertThat(p.rendezvous()).isTrue();
        assertThat(p.canReply()).isTrue();
        assertThat(p.replyEndpoint().address()).isEqualTo(0xabc0);
    }

    @Test
    void withoutTheReplyFieldThereIsNoEndpointToAnswer() {
        MemorySegment param = arena.allocate(16, 8);
        param.set(JAVA_LONG, 0, Ucp.AM_RECV_ATTR_FLAG_DATA);
        param.set(ADDRESS, 8, MemorySegment.ofAddress(0xabc0)); // not valid without the field bit
        AmHeader.Params p = AmHeader.params(param);
        assertThat(p.rendezvous()).isFalse();
        assertThat(p.canReply()).isFalse();
    }
}
