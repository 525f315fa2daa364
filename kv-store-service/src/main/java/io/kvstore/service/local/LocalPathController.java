package io.kvstore.service.local;

import io.kvstore.service.blocks.CommitRequest;
import io.kvstore.service.blocks.CommitResponse;
import io.kvstore.service.blocks.ReserveRequest;
import io.kvstore.service.security.Caller;
import jakarta.validation.Valid;
import java.io.IOException;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The same-host data path under {@code /v1/local}: where the DRAM tier's file is (and the local control
 * socket that carries the calls below without HTTP), slots to copy blocks into (reserve, then commit with
 * each block's CRC32C, checked in place before the block is visible), and leases of stored blocks with
 * where each lies (copy out, check the CRC32C, release with {@code DELETE /v1/leases/{id}}). Offsets are
 * bytes into the file, so they hold in any process's mapping. The work is {@link LocalPathService}'s.
 */
@RestController
@RequestMapping("/v1/local")
public class LocalPathController {

    private final LocalPathService service;

    public LocalPathController(LocalPathService service) {
        this.service = service;
    }

    @GetMapping
    public LocalDataPath.View describe(@RequestAttribute(Caller.ATTRIBUTE) Caller caller) {
        return service.describe(caller);
    }

    @PostMapping(path = "/namespaces/{ns}/blocks:reserve", consumes = MediaType.APPLICATION_JSON_VALUE)
    public LocalPathService.ReserveResponse reserve(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @Valid @RequestBody ReserveRequest request)
            throws IOException {
        return service.reserve(caller, ns, request);
    }

    @PostMapping(path = "/namespaces/{ns}/blocks:commit", consumes = MediaType.APPLICATION_JSON_VALUE)
    public CommitResponse commit(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @Valid @RequestBody CommitRequest request) {
        return service.commit(caller, ns, request);
    }

    @PostMapping(path = "/namespaces/{ns}/blocks:lease", consumes = MediaType.APPLICATION_JSON_VALUE)
    public LocalPathService.LeaseResponse lease(
            @RequestAttribute(Caller.ATTRIBUTE) Caller caller,
            @PathVariable("ns") String ns,
            @Valid @RequestBody LocalPathService.LeaseRequest request) {
        return service.lease(caller, ns, request);
    }
}
