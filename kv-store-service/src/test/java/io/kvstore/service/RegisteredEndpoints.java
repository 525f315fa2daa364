package io.kvstore.service;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.springframework.context.ApplicationContext;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

/**
 * Every {@code /v1} and {@code /admin} endpoint a running service has registered, as requests a test can
 * send ({method, path, content type, body}): so a test of authentication covers endpoints added later
 * without anyone remembering to list them.
 */
public final class RegisteredEndpoints {

    private static final Pattern VARIABLE = Pattern.compile("\\{([^}/]+)}");

    private RegisteredEndpoints() {}

    /**
     * @param values the value for each path variable by name ({@code ns}, {@code hash}, {@code id});
     *     a variable without one becomes {@code x}
     */
    public static List<String[]> of(ApplicationContext context, Map<String, String> values) {
        var mapping = context.getBean("requestMappingHandlerMapping", RequestMappingHandlerMapping.class);
        List<String[]> out = new ArrayList<>();
        for (RequestMappingInfo info : mapping.getHandlerMethods().keySet()) {
            var patterns = info.getPathPatternsCondition();
            if (patterns == null) {
                continue;
            }
            for (String pattern : patterns.getPatternValues()) {
                if (!pattern.startsWith("/v1") && !pattern.startsWith("/admin")) {
                    continue;
                }
                Matcher m = VARIABLE.matcher(pattern);
                StringBuilder path = new StringBuilder();
                while (m.find()) {
                    m.appendReplacement(path, Matcher.quoteReplacement(values.getOrDefault(m.group(1), "x")));
                }
                m.appendTail(path);
                var consumes = info.getConsumesCondition().getConsumableMediaTypes();
                String type =
                        consumes.isEmpty() ? null : consumes.iterator().next().toString();
                String body = type == null
                        ? null
                        : MediaType.APPLICATION_JSON.toString().equals(type) ? "{}" : "";
                var methods = info.getMethodsCondition().getMethods();
                for (RequestMethod method : methods.isEmpty() ? List.of(RequestMethod.GET) : methods) {
                    out.add(new String[] {method.name(), path.toString(), type, body});
                }
            }
        }
        return out;
    }
}
