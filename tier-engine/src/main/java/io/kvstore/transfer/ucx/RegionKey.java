package io.kvstore.transfer.ucx;

import io.kvstore.transfer.TransferException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * The remote key a {@link UcxTransferEngine} publishes for a region: UCX's packed rkey wrapped with
 * the region's base address and length and a CRC32C. UCX parses a packed rkey without bounds
 * checks, so a corrupted or foreign key could crash the process; the envelope lets the engine
 * reject such a key, and any span outside the region it describes, before UCX sees it.
 *
 * <p>Format (little-endian): magic "KVUC", version 1, base address, length, rkey length, rkey bytes,
 * CRC32C of everything before it.
 */
record RegionKey(long address, long length, byte[] packedRkey) {

    private static final int MAGIC = 0x4355564B; // "KVUC"
    private static final int VERSION = 1;
    private static final int FIXED = 4 + 4 + 8 + 8 + 4;

    byte[] encode() {
        ByteBuffer b = ByteBuffer.allocate(FIXED + packedRkey.length + 4).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(MAGIC)
                .putInt(VERSION)
                .putLong(address)
                .putLong(length)
                .putInt(packedRkey.length)
                .put(packedRkey);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue());
        return b.array();
    }

    /** Parses and verifies a published key; a key that fails any check is a {@link TransferException}. */
    static RegionKey decode(byte[] key) {
        if (key.length < FIXED + 4) {
            throw new TransferException("UCX remote key of " + key.length + " bytes is too short to be a kvstore key");
        }
        ByteBuffer b = ByteBuffer.wrap(key).order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt();
        int version = b.getInt();
        if (magic != MAGIC || version != VERSION) {
            throw new TransferException("UCX remote key has magic 0x" + Integer.toHexString(magic) + " version "
                    + version + "; expected a kvstore UCX key (KVUC, 1)");
        }
        long address = b.getLong();
        long length = b.getLong();
        int rkeyLength = b.getInt();
        if (rkeyLength <= 0 || rkeyLength != key.length - FIXED - 4) {
            throw new TransferException(
                    "UCX remote key claims an rkey of " + rkeyLength + " bytes in a key of " + key.length);
        }
        CRC32C crc = new CRC32C();
        crc.update(key, 0, key.length - 4);
        int stored = ByteBuffer.wrap(key, key.length - 4, 4)
                .order(ByteOrder.LITTLE_ENDIAN)
                .getInt();
        if (stored != (int) crc.getValue()) {
            throw new TransferException("UCX remote key fails its CRC32C check (corrupted or not from a kvstore peer)");
        }
        byte[] rkey = new byte[rkeyLength];
        b.get(rkey);
        return new RegionKey(address, length, rkey);
    }
}
