package io.kvstore.tier;

import java.io.IOException;

/** No slot of the needed size is free in the tier. */
public class TierFullException extends IOException {

    public TierFullException(String message) {
        super(message);
    }
}
