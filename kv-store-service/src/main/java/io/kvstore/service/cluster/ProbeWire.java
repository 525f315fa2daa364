package io.kvstore.service.cluster;

import io.kvstore.block.BlockHash;
import io.kvstore.block.TierId;
import io.kvstore.service.api.LookupResponse;
import io.kvstore.service.error.InvalidRequestException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The node-to-node form of {@code POST /v1/namespaces/{ns}/blocks:probe}, in bytes rather than JSON: a
 * lookup of 2,048 blocks through a three-node cluster sends two probes of ~700 hashes each, which as JSON
 * would be hex strings parsed in and tier names written out on both sides. The request body is one byte
 * (1: lease the held blocks, 0: do not) and then the hashes asked, back to back (the namespace's hash
 * length each); the answer is one byte per hash (the ordinal of the fastest tier holding it,
 * {@value #NOT_HELD} when not held) followed, when a lease was granted, by the lease as JSON.
 */
final class ProbeWire {

    static final int NOT_HELD = 0xFF;
    private static final TierId[] TIERS = TierId.values();

    private ProbeWire() {}

    /** What a probe asks: the hashes and whether to lease the held ones. */
    record Asked(List<BlockHash> hashes, boolean lease) {}

    static byte[] request(List<BlockHash> hashes, boolean lease) {
        int length = hashes.isEmpty() ? 0 : hashes.getFirst().length();
        byte[] out = new byte[1 + hashes.size() * length];
        out[0] = (byte) (lease ? 1 : 0);
        for (int i = 0; i < hashes.size(); i++) {
            BlockHash hash = hashes.get(i);
            if (hash.length() != length) {
                throw new IllegalArgumentException("a probe's hashes are all of one length");
            }
            hash.copyTo(out, 1 + i * length);
        }
        return out;
    }

    static Asked parseRequest(byte[] body, int hashBytes, int maxBlocks) {
        int n = body.length - 1;
        if (n < 0 || body[0] > 1 || body[0] < 0 || n % hashBytes != 0 || n / hashBytes > maxBlocks) {
            throw new InvalidRequestException(
                    "body",
                    "a probe's body is a lease flag (0 or 1) and then at most " + maxBlocks + " hashes of " + hashBytes
                            + " bytes, back to back; got " + body.length + " bytes");
        }
        List<BlockHash> hashes = new ArrayList<>(n / hashBytes);
        for (int at = 1; at < body.length; at += hashBytes) {
            hashes.add(BlockHash.of(body, at, hashBytes));
        }
        return new Asked(hashes, body[0] == 1);
    }

    static byte[] answer(Peer.Probe probe, JsonMapper json) {
        byte[] lease = probe.lease() == null ? new byte[0] : json.writeValueAsBytes(probe.lease());
        int n = probe.tiers().size();
        byte[] out = new byte[n + lease.length];
        for (int i = 0; i < n; i++) {
            String tier = probe.tiers().get(i);
            out[i] = (byte) (tier == null ? NOT_HELD : TierId.valueOf(tier).ordinal());
        }
        System.arraycopy(lease, 0, out, n, lease.length);
        return out;
    }

    static Peer.Probe parseAnswer(byte[] body, int asked, JsonMapper json) throws PeerException {
        if (body.length < asked) {
            throw new PeerException(
                    502, "a probe of " + asked + " blocks was answered with " + body.length + " bytes", null);
        }
        List<String> tiers = new ArrayList<>(asked);
        for (int i = 0; i < asked; i++) {
            int b = body[i] & 0xFF;
            tiers.add(b == NOT_HELD || b >= TIERS.length ? null : TIERS[b].name());
        }
        LookupResponse.LeaseView lease = null;
        if (body.length > asked) {
            try {
                lease = json.readValue(Arrays.copyOfRange(body, asked, body.length), LookupResponse.LeaseView.class);
            } catch (JacksonException e) {
                throw new PeerException(
                        502,
                        "a probe was answered with a lease that is not a kvstore lease: " + e.getOriginalMessage(),
                        e);
            }
        }
        return new Peer.Probe(tiers, lease);
    }
}
