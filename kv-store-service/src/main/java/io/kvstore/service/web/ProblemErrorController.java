package io.kvstore.service.web;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The error page for everything that fails outside the API's handlers (a request body that timed out in
 * the container, an error before a handler was chosen, a servlet error): RFC 9457 problem JSON like the
 * rest of the API, in place of Spring Boot's {@code {"timestamp",...}} body. Replaces Spring Boot's
 * {@code BasicErrorController}.
 */
@RestController
public class ProblemErrorController implements ErrorController {

    @RequestMapping("${server.error.path:/error}")
    public ResponseEntity<ProblemDetail> error(HttpServletRequest request) {
        Object code = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE);
        HttpStatus status = code instanceof Integer c && HttpStatus.resolve(c) != null
                ? HttpStatus.valueOf(c)
                : HttpStatus.INTERNAL_SERVER_ERROR;
        ProblemDetail problem = ProblemDetail.forStatus(status);
        problem.setType(URI.create("about:blank"));
        problem.setTitle(status.getReasonPhrase());
        problem.setDetail(detail(status));
        Object uri = request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI);
        if (uri instanceof String path) {
            problem.setInstance(URI.create(ContainerProblems.safePath(path)));
        }
        return ResponseEntity.status(status)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem);
    }

    static String detail(HttpStatus status) {
        return switch (status) {
            case REQUEST_TIMEOUT -> "the request body did not arrive in time (server.tomcat.connection-timeout)";
            case INTERNAL_SERVER_ERROR -> "the request failed unexpectedly; the service log has the details";
            default -> ContainerProblems.detail(status.value(), null);
        };
    }
}
