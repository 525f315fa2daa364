package io.kvstore.service.config;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;

/**
 * A start-up failure caused by a {@code kvstore.*} value that only a bean can check (the NVMe tier's sizes,
 * a NIXL backend flag, a token's grants): reported as its own message under "APPLICATION FAILED TO START",
 * as Spring reports a value that does not bind, instead of "Application run failed" and a stack trace of
 * bean creation. Registered in {@code META-INF/spring.factories}.
 */
public final class ConfigurationFailureAnalyzer implements FailureAnalyzer {

    @Override
    public @Nullable FailureAnalysis analyze(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            String message = t.getMessage();
            if (t instanceof RuntimeException && message != null && message.startsWith("kvstore.")) {
                return new FailureAnalysis(
                        message,
                        "Correct the kvstore.* property it names (configs/README.md lists each with its default).",
                        t);
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return null;
    }
}
