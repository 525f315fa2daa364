package io.kvstore.service.error;

import io.kvstore.concurrent.IntervalLog;
import io.kvstore.engine.BlockConflictException;
import io.kvstore.engine.BlockHeldException;
import io.kvstore.engine.TierEngine;
import io.kvstore.service.metrics.EngineMetrics;
import io.kvstore.tier.BlockNotFoundException;
import io.kvstore.tier.ChecksumMismatchException;
import io.kvstore.tier.TierClosedException;
import io.kvstore.tier.TierFullException;
import java.lang.reflect.Method;
import java.net.URI;
import java.time.Duration;
import java.util.Objects;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.util.ReflectionUtils;
import org.springframework.web.bind.MethodArgumentNotValidException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.method.annotation.ExceptionHandlerMethodResolver;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.exc.UnrecognizedPropertyException;

/**
 * Turns every failure into an RFC 9457 {@code application/problem+json} answer: Spring MVC's own errors
 * (415, 405, malformed JSON, ...) through {@link ResponseEntityExceptionHandler}, the service's through
 * the handlers below. A problem names the field at fault where there is one ({@code field}); stack traces
 * never leave the process, and an unexpected failure is logged once and answered 500 without detail.
 * Exceptions map by type: a client error is always one of the typed exceptions below, so a bug that
 * throws {@code IllegalArgumentException} shows as a 500 in the log instead of passing as a 400.
 */
@RestControllerAdvice
public class ProblemAdvice extends ResponseEntityExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ProblemAdvice.class);
    /** At most one log line per this long for clients that left mid-request, and one for requests answered 408. */
    static final Duration CLIENT_ERROR_LOG_INTERVAL = Duration.ofSeconds(10);
    /** This class's {@code @ExceptionHandler} methods by exception type, as Spring MVC resolves them. */
    private static final ExceptionHandlerMethodResolver HANDLERS =
            new ExceptionHandlerMethodResolver(ProblemAdvice.class);

    private final EngineMetrics metrics;
    private final TierEngine engine;

    private final IntervalLog clientGoneLines = new IntervalLog(CLIENT_ERROR_LOG_INTERVAL);
    private final IntervalLog timeoutLines = new IntervalLog(CLIENT_ERROR_LOG_INTERVAL);
    private final IntervalLog shutdownLines = new IntervalLog(CLIENT_ERROR_LOG_INTERVAL);

    /** The problem type of a request that met a tier closed by a shutdown under way. */
    public static final String SHUTTING_DOWN = "urn:kvstore:problem:shutting-down";

    public ProblemAdvice(EngineMetrics metrics, TierEngine engine) {
        this.metrics = metrics;
        this.engine = engine;
    }

    @ExceptionHandler(UnauthorizedException.class)
    ResponseEntity<Object> unauthorized(UnauthorizedException e) {
        return ResponseEntity.status(HttpStatus.UNAUTHORIZED)
                .header(HttpHeaders.WWW_AUTHENTICATE, "Bearer realm=\"kvstore\"")
                .contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem(HttpStatus.UNAUTHORIZED, "Unauthorized", e.getMessage()));
    }

    @ExceptionHandler(ForbiddenException.class)
    ResponseEntity<Object> forbidden(ForbiddenException e) {
        return respond(problem(HttpStatus.FORBIDDEN, "Forbidden", e.getMessage()));
    }

    @ExceptionHandler(TooManyRequestsException.class)
    ResponseEntity<Object> tooMany(TooManyRequestsException e) {
        return respond(problem(HttpStatus.TOO_MANY_REQUESTS, "Quota exceeded", e.getMessage()));
    }

    @ExceptionHandler(RequestTimeoutException.class)
    ResponseEntity<Object> timeout(RequestTimeoutException e) {
        long unlogged = timeoutLines.occurred();
        if (unlogged >= 0) {
            log.info("answered 408: {}{}", e.getMessage(), IntervalLog.more(unlogged, "request(s) answered 408"));
        }
        return ResponseEntity.status(HttpStatus.REQUEST_TIMEOUT)
                .header(HttpHeaders.CONNECTION, "close")
                .contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem(HttpStatus.REQUEST_TIMEOUT, "Request timeout", e.getMessage()));
    }

    @ExceptionHandler(QuotaExceededException.class)
    ResponseEntity<Object> overQuota(QuotaExceededException e) {
        return respond(problem(HttpStatus.INSUFFICIENT_STORAGE, "Quota exceeded", e.getMessage()));
    }

    @ExceptionHandler(InsufficientStorageException.class)
    ResponseEntity<Object> noStorage(InsufficientStorageException e) {
        return respond(problem(HttpStatus.INSUFFICIENT_STORAGE, "Insufficient storage", e.getMessage()));
    }

    /**
     * Nobody is left to answer: a count ({@code kvstore_client_disconnects_total}) and at most one INFO line
     * per {@link #CLIENT_ERROR_LOG_INTERVAL}, saying how many more left since the last line, so that an
     * engine restarting with hundreds of open requests writes one line, not hundreds. No stack trace.
     */
    @ExceptionHandler(ClientGoneException.class)
    void clientGone(ClientGoneException e, jakarta.servlet.http.HttpServletResponse response) {
        metrics.clientGone();
        long unlogged = clientGoneLines.occurred();
        if (unlogged < 0) {
            return;
        }
        log.info(
                "{} ({}){}",
                e.getMessage(),
                e.getCause() == null ? "closed" : e.getCause().toString(),
                IntervalLog.more(
                        unlogged, "client(s) left mid-request (kvstore_client_disconnects_total counts them all)"));
    }

    @ExceptionHandler(InvalidRequestException.class)
    ResponseEntity<Object> invalid(InvalidRequestException e) {
        ProblemDetail problem = problem(HttpStatus.BAD_REQUEST, "Invalid request", e.getMessage());
        problem.setProperty("field", e.field());
        return respond(problem);
    }

    @ExceptionHandler({NotFoundException.class, BlockNotFoundException.class})
    ResponseEntity<Object> notFound(Exception e) {
        return respond(problem(HttpStatus.NOT_FOUND, "Not found", e.getMessage()));
    }

    @ExceptionHandler({ConflictException.class, BlockConflictException.class, BlockHeldException.class})
    ResponseEntity<Object> conflict(RuntimeException e) {
        return respond(problem(HttpStatus.CONFLICT, "Conflict", e.getMessage()));
    }

    /** 409 of its own type, with this node's run id, so the calling node signs the call again and resends it. */
    @ExceptionHandler(NonceRefusedException.class)
    ResponseEntity<Object> nonceRefused(NonceRefusedException e) {
        ProblemDetail problem = problem(HttpStatus.CONFLICT, "Conflict", e.getMessage());
        problem.setType(URI.create(NonceRefusedException.TYPE));
        problem.setProperty(NonceRefusedException.BOOT, e.boot());
        return respond(problem);
    }

    @ExceptionHandler(PayloadTooLargeException.class)
    ResponseEntity<Object> tooLarge(PayloadTooLargeException e) {
        return respond(problem(HttpStatus.CONTENT_TOO_LARGE, "Request body too large", e.getMessage()));
    }

    @ExceptionHandler(TierFullException.class)
    ResponseEntity<Object> full(TierFullException e) {
        return respond(problem(
                HttpStatus.INSUFFICIENT_STORAGE,
                "No space in any tier",
                e.getMessage() + "; nothing more can be evicted or demoted now: the blocks left are pinned, "
                        + "leased or being read, the tier below is full or failing, or the room is held by "
                        + engine.activeReservations() + " open reservation(s) and uploads in progress"));
    }

    @ExceptionHandler(io.kvstore.service.error.TransportUnavailableException.class)
    ResponseEntity<Object> noTransport(RuntimeException e) {
        return respond(problem(HttpStatus.SERVICE_UNAVAILABLE, "One-sided transport unavailable", e.getMessage()));
    }

    @ExceptionHandler(ChecksumMismatchException.class)
    ResponseEntity<Object> corrupt(ChecksumMismatchException e) {
        log.warn("answered 500: {}", e.getMessage());
        return respond(problem(HttpStatus.INTERNAL_SERVER_ERROR, "Stored block is corrupt", e.getMessage()));
    }

    /**
     * A request still running when the engine closed (the service shutting down) met a closed tier: 503 of its own
     * type, so a client retries elsewhere or after the restart, and at most one INFO line per
     * {@link #CLIENT_ERROR_LOG_INTERVAL} with no stack trace, since every request in flight meets it.
     */
    @ExceptionHandler(TierClosedException.class)
    ResponseEntity<Object> shuttingDown(TierClosedException e) {
        return shuttingDown(e.getMessage());
    }

    private ResponseEntity<Object> shuttingDown(String what) {
        long unlogged = shutdownLines.occurred();
        if (unlogged >= 0) {
            log.info(
                    "answered 503, shutting down: {}{}",
                    what,
                    IntervalLog.more(unlogged, "request(s) met a closed tier"));
        }
        ProblemDetail problem = problem(
                HttpStatus.SERVICE_UNAVAILABLE,
                "Shutting down",
                "the service is shutting down (" + what + "); send the request again once it is back");
        problem.setType(URI.create(SHUTTING_DOWN));
        return respond(problem);
    }

    /**
     * Anything else is a fault: logged with its stack trace and answered 500 without detail. But an
     * {@link IllegalStateException} once the engine is closing is the shutdown again, met in another form (a
     * zero-copy send or an in-place fill whose view of a tier's memory was closed under it: the JDK's "Already
     * closed"), and answered as {@link #shuttingDown(TierClosedException)} is.
     */
    @ExceptionHandler(Exception.class)
    ResponseEntity<Object> unexpected(Exception e) {
        if (e instanceof IllegalStateException && engine.closing()) {
            return shuttingDown("the engine closed under the request: " + e.getMessage());
        }
        log.error("request failed unexpectedly", e);
        return respond(problem(
                HttpStatus.INTERNAL_SERVER_ERROR,
                "Internal error",
                "the request failed unexpectedly (" + e.getClass().getSimpleName()
                        + "); the service log has the details"));
    }

    /**
     * The problem a failure is answered with, for channels other than Spring MVC (the local control socket):
     * the handler above that Spring MVC would pick for it (the same {@code @ExceptionHandler} table, so a
     * handler added there applies here too), hence the same status, title, detail and field as over HTTP.
     * A failure whose handler needs the servlet response (a client gone) is answered as unexpected.
     */
    public ProblemDetail describe(Exception e) {
        Method handler = HANDLERS.resolveMethod(e);
        Object answer =
                handler != null && handler.getParameterCount() == 1 && handler.getReturnType() == ResponseEntity.class
                        ? invoke(handler, e)
                        : unexpected(e);
        return (ProblemDetail) Objects.requireNonNull(((ResponseEntity<?>) Objects.requireNonNull(answer)).getBody());
    }

    private @Nullable Object invoke(Method handler, Exception e) {
        ReflectionUtils.makeAccessible(handler);
        return ReflectionUtils.invokeMethod(handler, this, e);
    }

    /**
     * A request record's constraint failed ({@code @Valid}): one problem naming the first field at fault, as
     * a JSON path like {@code blocks[2].hash}, and what it must be.
     */
    @Override
    protected @Nullable ResponseEntity<Object> handleMethodArgumentNotValid(
            MethodArgumentNotValidException ex, HttpHeaders headers, HttpStatusCode status, WebRequest request) {
        ProblemDetail problem = problem(HttpStatus.BAD_REQUEST, "Invalid request", "the request body is not valid");
        org.springframework.validation.FieldError error = ex.getBindingResult().getFieldError();
        if (error != null) {
            problem.setDetail(error.getField() + " " + error.getDefaultMessage());
            problem.setProperty("field", error.getField());
        }
        return respond(problem);
    }

    /** Malformed JSON and wrong types: say where, as a JSON path like {@code layout.layers}. */
    @Override
    protected @Nullable ResponseEntity<Object> handleHttpMessageNotReadable(
            HttpMessageNotReadableException ex, HttpHeaders headers, HttpStatusCode status, WebRequest request) {
        for (Throwable t = ex; t != null; t = t.getCause()) {
            if (t instanceof PayloadTooLargeException tooLarge) {
                return tooLarge(tooLarge);
            }
        }
        ProblemDetail problem = problem(HttpStatus.BAD_REQUEST, "Malformed request body", "the body is not valid JSON");
        if (ex.getCause() instanceof JacksonException jackson) {
            String field = jackson.getPath().stream()
                    .map(ref -> ref.getPropertyName() != null ? ref.getPropertyName() : "[" + ref.getIndex() + "]")
                    .collect(Collectors.joining("."))
                    .replace(".[", "[");
            String what = jackson.getOriginalMessage();
            int cut = what.indexOf('\n');
            what = cut > 0 ? what.substring(0, cut) : what;
            if (jackson instanceof UnrecognizedPropertyException unknown) {
                // Jackson's own message names the Java class; the client needs the fields there are
                what = "not a field here; the fields are "
                        + unknown.getKnownPropertyIds().stream()
                                .map(String::valueOf)
                                .sorted()
                                .collect(Collectors.joining(", "));
            }
            if (!field.isEmpty()) {
                problem.setDetail("field '" + field + "': " + what);
                problem.setProperty("field", field);
            } else {
                problem.setDetail("the body is not valid JSON: " + what);
            }
        } else if (ex.getMessage() != null && ex.getMessage().startsWith("Required request body is missing")) {
            problem.setDetail("a JSON body is required");
        }
        return respond(problem);
    }

    @Override
    protected ResponseEntity<Object> createResponseEntity(
            @Nullable Object body, HttpHeaders headers, HttpStatusCode statusCode, WebRequest request) {
        if (body instanceof ProblemDetail problem) {
            if (problem.getType() == null) {
                problem.setType(URI.create("about:blank"));
            }
            // set, not negotiated: a request whose Accept names nothing we write (406) still gets its problem
            headers = HttpHeaders.copyOf(headers);
            headers.setContentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON);
        }
        return super.createResponseEntity(body, headers, statusCode, request);
    }

    static ProblemDetail problem(HttpStatus status, String title, String detail) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, detail);
        problem.setTitle(title);
        return problem;
    }

    private static ResponseEntity<Object> respond(ProblemDetail problem) {
        return ResponseEntity.status(problem.getStatus())
                .contentType(org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON)
                .body(problem);
    }
}
