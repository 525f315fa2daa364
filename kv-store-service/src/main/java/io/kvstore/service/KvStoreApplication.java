package io.kvstore.service;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The kvstore service: engine API, admin API, metrics and health over the tier engine. */
@SpringBootApplication
public class KvStoreApplication {

    public static void main(String[] args) {
        SpringApplication.run(KvStoreApplication.class, args);
    }
}
