package io.kvstore.service.error;

import org.jspecify.annotations.Nullable;

/**
 * A signed node-to-node call whose signature holds but which the called node's replay protection refused: its nonce
 * was taken here already, it is below its sender's replay window, or it was signed for another run of this node (one
 * before a restart). Answered 409 problem JSON of type {@link #TYPE}, which tells a calling node this refusal from
 * every other conflict: the call did its work at most once here, so the caller signs it again (a fresh nonce, this
 * node's current run) and sends it once more. The problem carries this node's run ({@link #BOOT}) for that.
 */
public final class NonceRefusedException extends RuntimeException {

    /** The problem type of this refusal; no other 409 carries it. */
    public static final String TYPE = "urn:kvstore:problem:peer-nonce-refused";
    /** The problem member holding the refusing node's run id (16 hex digits). */
    public static final String BOOT = "boot";

    private final String boot;

    /** @param boot the refusing node's run id, which a call signed for it must name */
    public NonceRefusedException(String message, String boot) {
        super(message, null, false, false);
        this.boot = boot;
    }

    /** The refusing node's run id: what the caller names when it signs the call again. */
    public String boot() {
        return boot;
    }

    /** Whether an answer of {@code status} whose problem is of {@code type} is this refusal. */
    public static boolean is(int status, @Nullable String type) {
        return status == 409 && TYPE.equals(type);
    }
}
