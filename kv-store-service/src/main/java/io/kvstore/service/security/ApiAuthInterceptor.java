package io.kvstore.service.security;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * Decides who is calling the engine API ({@code /v1/**}) by the rules of {@link EngineCallers} and leaves it
 * as {@link Caller#ATTRIBUTE}; refusals are exceptions, answered as problem JSON by the error advice.
 */
final class ApiAuthInterceptor implements HandlerInterceptor {

    private final EngineCallers callers;

    ApiAuthInterceptor(EngineCallers callers) {
        this.callers = callers;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler) {
        request.setAttribute(Caller.ATTRIBUTE, callers.of(request));
        return true;
    }
}
