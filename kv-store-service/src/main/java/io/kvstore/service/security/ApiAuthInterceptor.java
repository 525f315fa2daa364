package io.kvstore.service.security;

import io.kvstore.service.quota.TenantAdmission;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.jspecify.annotations.Nullable;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Decides who is calling the engine API ({@code /v1/**}) by the rules of {@link EngineCallers} and leaves it
 * as {@link Caller#ATTRIBUTE}; refusals are exceptions, answered as problem JSON by the error advice. Gives
 * back the tenant's place a request took to run ({@link AdmissionAdvice}) when the request is done.
 */
final class ApiAuthInterceptor implements HandlerInterceptor {

    /** Request attribute holding the {@link TenantAdmission.Permit} a request runs under, if it took one. */
    static final String PLACE = "io.kvstore.admission";

    private final EngineCallers callers;

    ApiAuthInterceptor(EngineCallers callers) {
        this.callers = callers;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
        request.setAttribute(Caller.ATTRIBUTE, callers.of(request));
        return true;
    }

    @Override
    public void afterCompletion(
            HttpServletRequest request, HttpServletResponse response, Object handler, @Nullable Exception ex) {
        if (request.getAttribute(PLACE) instanceof TenantAdmission.Permit place) {
            request.removeAttribute(PLACE);
            place.close();
        }
    }
}
