package io.kvstore.service.blocks;

import java.util.List;

/**
 * What a commit made of each reserved block: stored now, stored before by someone else, or refused (a CRC32C
 * that did not match, a slot that expired).
 */
public record CommitResponse(List<String> committed, List<String> alreadyStored, List<Failure> failed) {

    /** A block the commit refused, and why. */
    public record Failure(String hash, String reason) {}
}
