package io.kvstore.service.cluster;

import io.kvstore.service.security.PeerCredentials;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import tools.jackson.databind.json.JsonMapper;

/** The {@link Peer} for each member: this node in process, the others over one shared HTTP client. */
public final class Peers {

    private final LocalPeer self;
    private final HttpClient http;
    private final JsonMapper json;
    private final Duration timeout;
    private final String token;
    private final String adminToken;
    private final PeerCredentials credentials;
    /**
     * By name and address, not by the whole member: a node that registers again after its lease expired comes
     * back with a new join time, and is the same peer.
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
        return remote.computeIfAbsent(
                member.name() + " " + member.address(),
                k -> new RemotePeer(member, self.member(), http, json, timeout, token, adminToken, credentials));
    }

    public Member self() {
        return self.member();
    }
}
