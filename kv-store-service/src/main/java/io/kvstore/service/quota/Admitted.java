package io.kvstore.service.quota;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks an engine API handler whose work is the CPU kind (hashing a prompt, checksumming slots, walking the
 * catalog): it runs only once its tenant has a place for it ({@link TenantAdmission}), taken after its JSON
 * body has arrived, so a client that sends its body slowly holds no place meanwhile. Handlers that stream
 * block bytes (store, fetch) are not marked: they wait on the network, not on the cores.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface Admitted {}
