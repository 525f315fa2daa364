package io.kvstore.service.cluster;

import io.kvstore.service.security.PeerCredentials;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@link Peer} for each member: this node in process, the others over one shared HTTP client (and each
 * its own pool of probe connections). A member that comes back at another address replaces its peer, whose
 * pooled connections to the old address are closed; {@link #close} closes them all when the node stops.
 */
public final class Peers implements AutoCloseable {

    private final LocalPeer self;
    private final HttpClient http;
    private final JsonMapper json;
    private final Duration timeout;
    private final String token;
    private final String adminToken;
    private final PeerCredentials credentials;
    /**
     * By name, not by the whole member: a node that registers again after its lease expired comes back with a
     * new join time, and is the same peer unless its address changed.
     */
    private final ConcurrentMap<String, RemotePeer> remote = new ConcurrentHashMap<>();

    public Peers(
            LocalPeer self,
            JsonMapper json,
            Duration timeout,
            String token,
            String adminToken,
            PeerCredentials credentials) {
        this.self = self;
        this.credentials = credentials;
        this.adminToken = adminToken;
        this.json = json;
        this.timeout = timeout;
        this.token = token;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(timeout)
                .build();
    }

    public Peer of(Member member) {
        if (member.isSameNode(self.member())) {
            return self;
        }
        RemotePeer known = remote.get(member.name());
        if (known != null && known.member().address().equals(member.address())) {
            known.published(member.boot());
            return known;
        }
        RemotePeer[] replaced = new RemotePeer[1];
        RemotePeer peer = remote.compute(member.name(), (name, before) -> {
            if (before != null && before.member().address().equals(member.address())) {
                before.published(member.boot());
                return before;
            }
            replaced[0] = before;
            return new RemotePeer(member, self.member(), http, json, timeout, token, adminToken, credentials);
        });
        if (replaced[0] != null) {
            // its pooled sockets lead to an address the node left: they would stay open (CLOSE_WAIT) for good
            replaced[0].close();
        }
        return peer;
    }

    /** Closes every peer's pooled connections and the shared client's threads. */
    @Override
    public void close() {
        remote.values().forEach(RemotePeer::close);
        remote.clear();
        http.shutdownNow();
    }

    public Member self() {
        return self.member();
    }
}
