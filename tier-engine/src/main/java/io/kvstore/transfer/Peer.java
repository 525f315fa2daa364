package io.kvstore.transfer;

/** A connected remote agent or worker; closing it tears down the connection. */
public interface Peer extends AutoCloseable {

    /** The name the peer was connected under. */
    String name();

    @Override
    void close();
}
