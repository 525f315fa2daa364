package io.kvstore.ffm.ucx;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The envelope kvstore puts around a UCX packed remote key: magic, length and CRC32C. UCX trusts the
 * bytes it unpacks and crashes the process on garbage, so a key that arrives truncated, corrupted or
 * forged is refused here, before UCX sees it.
 */
final class PackedKey {

    private static final int MAGIC = 0x4B56524B; // "KVRK"
    private static final int HEADER = 12;

    private PackedKey() {
    }

    static byte[] wrap(byte[] ucxKey) {
        CRC32C crc = new CRC32C();
        crc.update(ucxKey);
        return ByteBuffer.allocate(HEADER + ucxKey.length).putInt(MAGIC).putInt(ucxKey.length)
                .putInt((int) crc.getValue()).put(ucxKey).array();
    }

    /** The UCX key inside {@code wrapped}, or an {@link UcxException} saying what is wrong with it. */
    static byte[] unwrap(byte[] wrapped) {
        if (wrapped == null || wrapped.length < HEADER) {
            throw new UcxException("ucp_ep_rkey_unpack refused: a remote key has at least " + HEADER + " bytes, got "
                    + (wrapped == null ? "none" : wrapped.length), 0);
        }
        ByteBuffer in = ByteBuffer.wrap(wrapped);
        if (in.getInt() != MAGIC) {
            throw new UcxException("ucp_ep_rkey_unpack refused: not a kvstore remote key (bad magic)", 0);
        }
        int length = in.getInt();
        if (length != wrapped.length - HEADER) {
            throw new UcxException("ucp_ep_rkey_unpack refused: remote key says " + length + " bytes but carries "
                    + (wrapped.length - HEADER), 0);
        }
        int expected = in.getInt();
        byte[] key = new byte[length];
        in.get(key);
        CRC32C crc = new CRC32C();
        crc.update(key);
        if ((int) crc.getValue() != expected) {
            throw new UcxException("ucp_ep_rkey_unpack refused: remote key fails its checksum", 0);
        }
        return key;
    }
}
