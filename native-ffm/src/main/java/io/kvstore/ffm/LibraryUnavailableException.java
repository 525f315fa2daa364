package io.kvstore.ffm;

/** A native library or one of its symbols cannot be used; the message says which and why. */
public class LibraryUnavailableException extends RuntimeException {

    public LibraryUnavailableException(String message) {
        super(message);
    }
}
