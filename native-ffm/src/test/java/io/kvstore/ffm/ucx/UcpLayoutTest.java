package io.kvstore.ffm.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compiles a C program against the installed UCX headers (libucx-dev) and checks that every struct size
 * and field offset the Java binding relies on matches what the C compiler says.
 */
class UcpLayoutTest {

    private static final String PROGRAM = """
            #include <stdio.h>
            #include <stddef.h>
            #include <ucp/api/ucp.h>
            #define S(t) printf(#t " %zu\\n", sizeof(t))
            #define O(t, f) printf(#t "." #f " %zu\\n", offsetof(t, f))
            int main(void) {
                S(ucp_params_t); O(ucp_params_t, field_mask); O(ucp_params_t, features);
                S(ucp_worker_params_t); O(ucp_worker_params_t, thread_mode);
                S(ucp_ep_params_t); O(ucp_ep_params_t, address); O(ucp_ep_params_t, err_mode);
                S(ucp_request_param_t); O(ucp_request_param_t, op_attr_mask); O(ucp_request_param_t, flags);
                S(ucp_mem_map_params_t); O(ucp_mem_map_params_t, address); O(ucp_mem_map_params_t, length);
                printf("UCP_FEATURE_RMA %d\\n", (int) UCP_FEATURE_RMA);
                printf("UCP_FEATURE_AM %d\\n", (int) UCP_FEATURE_AM);
                printf("UCS_THREAD_MODE_MULTI %d\\n", (int) UCS_THREAD_MODE_MULTI);
                printf("UCP_ERR_HANDLING_MODE_PEER %d\\n", (int) UCP_ERR_HANDLING_MODE_PEER);
                printf("UCP_EP_CLOSE_FLAG_FORCE %d\\n", (int) UCP_EP_CLOSE_FLAG_FORCE);
                printf("UCP_OP_ATTR_FIELD_FLAGS %d\\n", (int) UCP_OP_ATTR_FIELD_FLAGS);
                printf("UCP_API_MINOR %d\\n", (int) UCP_API_MINOR);
                return 0;
            }
            """;

    @TempDir
    Path dir;

    private Map<String, Long> compileAndRun() throws Exception {
        assumeTrue(Files.exists(Path.of("/usr/include/ucp/api/ucp.h")), "skipped: UCX headers missing (apt-get install libucx-dev)");
        Path source = dir.resolve("layout.c");
        Path binary = dir.resolve("layout");
        Files.writeString(source, PROGRAM);
        Process gcc;
        try {
            gcc = new ProcessBuilder("gcc", "-o", binary.toString(), source.toString()).redirectErrorStream(true).start();
        } catch (java.io.IOException noGcc) {
            assumeTrue(false, "skipped: gcc is not installed");
            return Map.of();
        }
        String compilerOutput = new String(gcc.getInputStream().readAllBytes());
        assertThat(gcc.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(gcc.exitValue()).as("gcc: %s", compilerOutput).isZero();
        Process run = new ProcessBuilder(binary.toString()).start();
        Map<String, Long> values = new HashMap<>();
        for (String line : new String(run.getInputStream().readAllBytes()).split("\n")) {
            String[] parts = line.trim().split(" ");
            values.put(parts[0], Long.parseLong(parts[1]));
        }
        run.waitFor();
        return values;
    }

    private static long offset(StructLayout layout, String field) {
        return layout.byteOffset(PathElement.groupElement(field));
    }

    @Test
    void javaLayoutsMatchTheInstalledHeaders() throws Exception {
        Map<String, Long> c = compileAndRun();
        assertThat(Ucp.PARAMS.byteSize()).isEqualTo(c.get("ucp_params_t")).isEqualTo(80);
        assertThat(offset(Ucp.PARAMS, "features")).isEqualTo(c.get("ucp_params_t.features"));
        assertThat(Ucp.WORKER_PARAMS.byteSize()).isEqualTo(c.get("ucp_worker_params_t"));
        assertThat(offset(Ucp.WORKER_PARAMS, "thread_mode")).isEqualTo(c.get("ucp_worker_params_t.thread_mode"));
        assertThat(Ucp.EP_PARAMS.byteSize()).isEqualTo(c.get("ucp_ep_params_t")).isEqualTo(104);
        assertThat(offset(Ucp.EP_PARAMS, "address")).isEqualTo(c.get("ucp_ep_params_t.address"));
        assertThat(offset(Ucp.EP_PARAMS, "err_mode")).isEqualTo(c.get("ucp_ep_params_t.err_mode"));
        assertThat(Ucp.REQUEST_PARAM.byteSize()).isEqualTo(c.get("ucp_request_param_t")).isEqualTo(72);
        assertThat(offset(Ucp.REQUEST_PARAM, "flags")).isEqualTo(c.get("ucp_request_param_t.flags"));
        assertThat(Ucp.MEM_MAP_PARAMS.byteSize()).isEqualTo(c.get("ucp_mem_map_params_t"));
        assertThat(offset(Ucp.MEM_MAP_PARAMS, "address")).isEqualTo(c.get("ucp_mem_map_params_t.address"));
        assertThat(offset(Ucp.MEM_MAP_PARAMS, "length")).isEqualTo(c.get("ucp_mem_map_params_t.length"));
        assertThat(Ucp.FEATURE_RMA).isEqualTo(c.get("UCP_FEATURE_RMA"));
        assertThat(Ucp.FEATURE_AM).isEqualTo(c.get("UCP_FEATURE_AM"));
        assertThat((long) Ucp.THREAD_MODE_MULTI).isEqualTo(c.get("UCS_THREAD_MODE_MULTI"));
        assertThat((long) Ucp.ERR_HANDLING_MODE_PEER).isEqualTo(c.get("UCP_ERR_HANDLING_MODE_PEER"));
        assertThat((long) Ucp.EP_CLOSE_FLAG_FORCE).isEqualTo(c.get("UCP_EP_CLOSE_FLAG_FORCE"));
        assertThat((long) Ucp.OP_ATTR_FIELD_FLAGS).isEqualTo(c.get("UCP_OP_ATTR_FIELD_FLAGS"));
        assertThat((long) Ucp.API_MINOR).isEqualTo(c.get("UCP_API_MINOR"));
    }
}
