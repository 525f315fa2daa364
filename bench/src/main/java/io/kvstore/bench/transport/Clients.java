package io.kvstore.bench.transport;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** Runs numbered batches on a number of client threads, batch {@code b} on client {@code b % clients}. */
final class Clients {

    /** One batch of work, by its number. */
    @FunctionalInterface
    interface Batch {
        void run(int index) throws Exception;
    }

    private Clients() {}

    /** Runs batches {@code 0..batches-1} on {@code clients} threads and waits for all; the first failure is thrown. */
    static void run(int clients, int batches, Batch work) throws Exception {
        try (ExecutorService pool = Executors.newFixedThreadPool(clients)) {
            List<Future<?>> futures = new ArrayList<>();
            for (int c = 0; c < clients; c++) {
                int client = c;
                futures.add(pool.submit(() -> {
                    for (int b = client; b < batches; b += clients) {
                        work.run(b);
                    }
                    return null;
                }));
            }
            try {
                for (Future<?> f : futures) {
                    f.get(10, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
        }
    }
}
