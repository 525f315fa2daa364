import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.List;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs the named test classes with JUnit's launcher and prints one line per test (PASS, FAIL with the
 * failure, SKIP with the reason): for a machine with a Java runtime but no Maven, such as the lent GPU
 * machine (bench/gpu.sh). Exits 1 if any test failed, 2 if none ran.
 */
public final class RunTests {

    public static void main(String[] args) {
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
                .selectors(List.of(args).stream().map(name -> selectClass(name)).toList())
                .build();
        int[] counts = new int[4]; // passed, failed, skipped, aborted
        TestExecutionListener listener = new TestExecutionListener() {
            @Override
            public void executionSkipped(TestIdentifier test, String reason) {
                counts[2]++;
                System.out.println("SKIP " + test.getLegacyReportingName() + ": " + reason);
            }

            @Override
            public void executionFinished(TestIdentifier test, TestExecutionResult result) {
                String name = test.getUniqueId()
                        .replaceAll(".*\\[class:([^\\]]+)\\].*\\[method:([^\\]]+)\\].*", "$1.$2");
                if (!test.isTest() && result.getStatus() == TestExecutionResult.Status.SUCCESSFUL) {
                    return;
                }
                switch (result.getStatus()) {
                    case SUCCESSFUL -> {
                        counts[0]++;
                        System.out.println("PASS " + name);
                    }
                    case ABORTED -> {
                        counts[3]++;
                        System.out.println("SKIP " + name + ": "
                                + result.getThrowable().map(Throwable::getMessage).orElse("aborted"));
                    }
                    case FAILED -> {
                        counts[1]++;
                        System.out.println("FAIL " + name);
                        result.getThrowable().ifPresent(t -> t.printStackTrace(System.out));
                    }
                }
            }
        };
        LauncherFactory.create().execute(request, listener);
        System.out.printf(
                "tests: %d passed, %d failed, %d skipped (disabled %d, assumption not met %d)%n",
                counts[0], counts[1], counts[2] + counts[3], counts[2], counts[3]);
        System.exit(counts[1] > 0 ? 1 : counts[0] == 0 ? 2 : 0);
    }
}
