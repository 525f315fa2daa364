package io.kvstore.service;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The engine process's verdict is read however much the process logs before it. */
class OneSidedEnginesTest {

    @Test
    void theVerdictOfAProcessThatLogsMoreThanAPipeHoldsIsRead() throws Exception {
        // 1 MiB of log lines, far past a pipe's 64 KiB, then the verdict
        Process p = new ProcessBuilder(
                        "sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' 'x' | fold -w 100; echo; echo 'OK 3 blocks'")
                .start();
        assertThat(OneSidedEngines.verdict(p)).isEqualTo("OK 3 blocks");
        assertThat(p.exitValue()).isZero();
    }
}
