package io.kvstore.service.web;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ErrorReportValve;

/**
 * Tomcat's error report for requests it rejects itself, before any servlet (an encoded {@code /} or NUL in
 * the path, a header too large, a malformed request line): problem JSON instead of Tomcat's HTML page.
 * Never echoes the request or a stack trace.
 */
public final class ProblemErrorReportValve extends ErrorReportValve {

    public ProblemErrorReportValve() {
        setShowReport(false);
        setShowServerInfo(false);
    }

    @Override
    protected void report(Request request, Response response, Throwable throwable) {
        int status = response.getStatus();
        if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) {
            return;
        }
        try {
            response.setContentType("application/problem+json");
            response.setCharacterEncoding("UTF-8");
            byte[] body = ContainerProblems.json(status, ContainerProblems.detail(status, null));
            response.setContentLength(body.length);
            OutputStream out = response.getOutputStream();
            out.write(body);
            response.finishResponse();
        } catch (IOException | IllegalStateException e) {
            // the connection is gone or the response was committed meanwhile: nothing more to send
        }
    }
}
