package io.kvstore.service.security;

import io.kvstore.service.quota.Admitted;
import io.kvstore.service.quota.TenantAdmission;
import jakarta.servlet.http.HttpServletRequest;
import java.lang.reflect.Type;
import org.springframework.core.MethodParameter;
import org.springframework.http.HttpInputMessage;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.web.bind.annotation.ControllerAdvice;
import org.springframework.web.context.request.RequestContextHolder;
import org.springframework.web.context.request.ServletRequestAttributes;
import org.springframework.web.servlet.mvc.method.annotation.RequestBodyAdviceAdapter;

/**
 * Takes the caller's tenant a place ({@link TenantAdmission}) for a handler marked {@link Admitted}, once its
 * body has been read and before the handler runs; {@link ApiAuthInterceptor} gives it back when the request
 * is done. A call a cluster peer forwards takes none: its first node admitted it, and a place held there while
 * the peer waits for one of its own could deadlock two nodes.
 */
@ControllerAdvice
final class AdmissionAdvice extends RequestBodyAdviceAdapter {

    private final TenantAdmission admission;
    private final PeerCredentials peers;

    AdmissionAdvice(TenantAdmission admission, PeerCredentials peers) {
        this.admission = admission;
        this.peers = peers;
    }

    @Override
    public boolean supports(
            MethodParameter parameter, Type targetType, Class<? extends HttpMessageConverter<?>> converterType) {
        return parameter.hasMethodAnnotation(Admitted.class);
    }

    @Override
    public Object afterBodyRead(
            Object body,
            HttpInputMessage input,
            MethodParameter parameter,
            Type targetType,
            Class<? extends HttpMessageConverter<?>> converterType) {
        if (RequestContextHolder.getRequestAttributes() instanceof ServletRequestAttributes attributes) {
            HttpServletRequest request = attributes.getRequest();
            if (request.getAttribute(Caller.ATTRIBUTE) instanceof Caller caller
                    && request.getAttribute(ApiAuthInterceptor.PLACE) == null
                    && peers.forwarded(request) == null) {
                request.setAttribute(ApiAuthInterceptor.PLACE, admission.enter(caller.tenant()));
            }
        }
        return body;
    }
}
