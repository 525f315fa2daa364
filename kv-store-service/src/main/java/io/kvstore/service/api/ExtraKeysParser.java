package io.kvstore.service.api;

import io.kvstore.hashing.ExtraKeys;
import io.kvstore.hashing.HashInputException;
import io.kvstore.hashing.MultimodalItem;
import io.kvstore.service.error.InvalidRequestException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;

/** Turns a lookup's {@code extraKeys} JSON into {@link ExtraKeys}, naming the field at fault on bad input. */
public final class ExtraKeysParser {

    private ExtraKeysParser() {}

    public static ExtraKeys parse(LookupRequest.ExtraKeysJson json) {
        if (json == null) {
            return ExtraKeys.NONE;
        }
        UnknownFields.refuse(json.unknown(), "extraKeys.", "lora, cacheSalt, more, multimodal and promptEmbeds");
        List<MultimodalItem> items = new ArrayList<>();
        if (json.multimodal() != null) {
            for (int i = 0; i < json.multimodal().size(); i++) {
                items.add(item(json.multimodal().get(i), "extraKeys.multimodal[" + i + "]"));
            }
        }
        List<byte[]> embeds = new ArrayList<>();
        if (json.promptEmbeds() != null) {
            for (int i = 0; i < json.promptEmbeds().size(); i++) {
                embeds.add(digest(json.promptEmbeds().get(i), "extraKeys.promptEmbeds[" + i + "]"));
            }
        }
        try {
            return new ExtraKeys(json.lora(), json.cacheSalt(), json.more(), items, embeds);
        } catch (HashInputException e) {
            throw new InvalidRequestException("extraKeys." + e.field(), "extraKeys." + e.getMessage());
        }
    }

    private static MultimodalItem item(LookupRequest.MultimodalJson json, String field) {
        if (json == null || json.identifier() == null || json.offset() == null || json.length() == null) {
            throw new InvalidRequestException(
                    field, field + " needs \"identifier\" (string), \"offset\" and \"length\" (token counts)");
        }
        try {
            return new MultimodalItem(json.identifier(), json.offset(), json.length());
        } catch (IllegalArgumentException e) {
            throw new InvalidRequestException(field, field + ": " + e.getMessage());
        }
    }

    /** A 32-byte digest as 64 hex digits or as base64 (standard or URL-safe, padded or not). */
    static byte[] digest(String text, String field) {
        int want = ExtraKeys.PROMPT_EMBED_HASH_BYTES;
        if (text != null) {
            String s = text.strip();
            // ASCII hex only: Character.digit also takes fullwidth and other scripts' digits, which parseHex refuses
            if (s.length() == 2 * want && s.chars().allMatch(c -> c < 0x80 && Character.digit(c, 16) >= 0)) {
                return HexFormat.of().parseHex(s);
            }
            try {
                byte[] bytes = s.indexOf('-') >= 0 || s.indexOf('_') >= 0
                        ? Base64.getUrlDecoder().decode(s)
                        : Base64.getDecoder().decode(s);
                if (bytes.length == want) {
                    return bytes;
                }
            } catch (IllegalArgumentException ignored) {
                // answered below
            }
        }
        throw new InvalidRequestException(
                field,
                field + " must be a " + want + "-byte SHA-256 digest as " + 2 * want + " hex digits or base64, got '"
                        + text + "'");
    }
}
