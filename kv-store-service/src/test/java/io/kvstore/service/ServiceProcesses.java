package io.kvstore.service;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What tests need to run kvstore as a process of its own (a SIGKILL must hit a real process, not a Spring
 * context): the command line of a service JVM on the tests' classpath, and a free loopback port for it.
 */
public final class ServiceProcesses {

    private ServiceProcesses() {}

    /**
     * {@code java ... io.kvstore.service.KvStoreApplication} with the tests' classpath, a small heap and C1 only
     * (start-up matters more than peak speed in a test), followed by {@code args}.
     */
    public static List<String> command(List<String> args) {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("java.class.path"),
                KvStoreApplication.class.getName()));
        command.addAll(args);
        return command;
    }

    /** A loopback port free at the time of the call. */
    public static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
