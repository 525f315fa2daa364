package io.kvstore.service.config;

import jakarta.validation.Validation;
import jakarta.validation.ValidatorFactory;
import java.util.Map;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.bind.validation.ValidationBindHandler;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.validation.beanvalidation.SpringValidatorAdapter;

/**
 * Binds properties to a {@code @ConfigurationProperties} record as the service does at start-up, bean validation
 * included, without starting a Spring context: for tests of what a configuration is refused for, and how.
 */
public final class StartupBinding {

    /** One factory for the test JVM: building one is the slow part, and it holds nothing between binds. */
    private static final ValidatorFactory VALIDATORS = Validation.buildDefaultValidatorFactory();

    private StartupBinding() {}

    /** {@code properties} bound under {@code prefix} to {@code type}; throws the service's start-up exception. */
    public static <T> T bind(String prefix, Class<T> type, Map<String, String> properties) {
        return new Binder(new MapConfigurationPropertySource(properties))
                .bindOrCreate(
                        prefix,
                        Bindable.of(type),
                        new ValidationBindHandler(new SpringValidatorAdapter(VALIDATORS.getValidator())));
    }
}
