package io.kvstore.ffm.ucx;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.StructLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Java layouts match the C structs of the installed UCX headers, checked with a compiled offsetof program. */
class UcpStructsTest {

    private static final Path HEADER = Path.of("/usr/include/ucp/api/ucp.h");

    private static final Map<String, StructLayout> STRUCTS = new LinkedHashMap<>();

    static {
        STRUCTS.put("ucp_params_t", UcpStructs.PARAMS);
        STRUCTS.put("ucp_worker_params_t", UcpStructs.WORKER_PARAMS);
        STRUCTS.put("ucp_ep_params_t", UcpStructs.EP_PARAMS);
        STRUCTS.put("ucp_request_param_t", UcpStructs.REQUEST_PARAM);
        STRUCTS.put("ucp_mem_map_params_t", UcpStructs.MEM_MAP_PARAMS);
        STRUCTS.put("ucp_mem_attr_t", UcpStructs.MEM_ATTR);
        STRUCTS.put("ucp_am_handler_param_t", UcpStructs.AM_HANDLER_PARAM);
        STRUCTS.put("ucp_am_recv_param_t", UcpStructs.AM_RECV_PARAM);
        STRUCTS.put("ucp_listener_params_t", UcpStructs.LISTENER_PARAMS);
        STRUCTS.put("ucp_listener_attr_t", UcpStructs.LISTENER_ATTR);
    }

    /** Java field name -> C member expression where they differ. */
    private static final Map<String, String> C_NAMES = Map.of(
            "err_handler_cb", "err_handler.cb",
            "err_handler_arg", "err_handler.arg",
            "sockaddr_addr", "sockaddr.addr",
            "sockaddr_addrlen", "sockaddr.addrlen",
            "accept_handler_cb", "accept_handler.cb",
            "accept_handler_arg", "accept_handler.arg",
            "conn_handler_cb", "conn_handler.cb",
            "conn_handler_arg", "conn_handler.arg");

    @Test
    void layoutsMatchTheInstalledHeaders(@TempDir Path dir) throws Exception {
        assumeTrue(
                Files.exists(HEADER),
                () -> skip("UCX headers not installed (" + HEADER + "; apt-get install libucx-dev)"));
        assumeTrue(onPath("gcc"), () -> skip("gcc not on PATH"));

        StringBuilder c = new StringBuilder(
                "#include <stdio.h>\n#include <stddef.h>\n#include <ucp/api/ucp.h>\nint main(void) {\n");
        for (var e : STRUCTS.entrySet()) {
            c.append("  printf(\"%s sizeof %zu\\n\", \"")
                    .append(e.getKey())
                    .append("\", sizeof(")
                    .append(e.getKey())
                    .append("));\n");
            for (String field : namedFields(e.getValue())) {
                String member = C_NAMES.getOrDefault(field, field);
                c.append("  printf(\"%s ")
                        .append(field)
                        .append(" %zu\\n\", \"")
                        .append(e.getKey())
                        .append("\", offsetof(")
                        .append(e.getKey())
                        .append(", ")
                        .append(member)
                        .append("));\n");
            }
        }
        c.append("  return 0;\n}\n");
        Path src = dir.resolve("layout.c");
        Files.writeString(src, c);
        Path exe = dir.resolve("layout");
        String compiled = run(List.of("gcc", "-o", exe.toString(), src.toString()));
        assertThat(Files.exists(exe)).as("gcc output: %s", compiled).isTrue();

        Map<String, Long> expected = new LinkedHashMap<>();
        for (String line : run(List.of(exe.toString())).lines().toList()) {
            String[] p = line.split(" ");
            expected.put(p[0] + " " + p[1], Long.parseLong(p[2]));
        }
        Map<String, Long> actual = new LinkedHashMap<>();
        for (var e : STRUCTS.entrySet()) {
            actual.put(e.getKey() + " sizeof", e.getValue().byteSize());
            for (String field : namedFields(e.getValue())) {
                actual.put(e.getKey() + " " + field, UcpStructs.offset(e.getValue(), field));
            }
        }
        assertThat(actual).isEqualTo(expected);
        assertThat(actual)
                .containsEntry("ucp_params_t sizeof", 80L)
                .containsEntry("ucp_ep_params_t sizeof", 104L)
                .containsEntry("ucp_request_param_t sizeof", 72L)
                .containsEntry("ucp_listener_params_t sizeof", 56L);
    }

    private static List<String> namedFields(StructLayout layout) {
        return layout.memberLayouts().stream()
                .filter(m -> !(m instanceof java.lang.foreign.PaddingLayout))
                .flatMap(m -> m.name().stream())
                .toList();
    }

    private static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish in 60 s");
        }
        return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }

    private static boolean onPath(String tool) {
        String path = System.getenv().getOrDefault("PATH", "");
        return java.util.Arrays.stream(path.split(":")).anyMatch(d -> Files.isExecutable(Path.of(d, tool)));
    }

    private static String skip(String reason) {
        System.out.println("SKIPPED UcpStructsTest: " + reason);
        return reason;
    }
}
