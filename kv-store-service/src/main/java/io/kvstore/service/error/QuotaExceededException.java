package io.kvstore.service.error;

/**
 * A tenant's store or reservation would pass one of its quotas (bytes in a tier): answered 507 with a
 * detail naming the tenant, the tier and the limit. Nothing was stored.
 */
public final class QuotaExceededException extends RuntimeException {
    public QuotaExceededException(String message) {
        super(message, null, false, false);
    }
}
