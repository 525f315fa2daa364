package io.kvstore.tier;

import java.io.IOException;

/** The tier does not hold the requested block. */
public class BlockNotFoundException extends IOException {

    public BlockNotFoundException(String message) {
        super(message);
    }
}
