package io.kvstore.service.cluster;

import java.util.List;

/**
 * The live members at one moment, sorted by name, and the placement epoch: the etcd revision at which
 * this set was observed. Placement over equal sets is equal, so nodes that see the same set agree on
 * every block's owner.
 */
public record MemberSet(List<Member> members, long epoch) {

    public MemberSet {
        members = members.stream().sorted().toList();
    }

    public static final MemberSet EMPTY = new MemberSet(List.of(), 0);

    /** The member named {@code name}, or null. */
    public Member named(String name) {
        for (Member m : members) {
            if (m.name().equals(name)) {
                return m;
            }
        }
        return null;
    }

    public boolean sameMembers(MemberSet other) {
        return members.equals(other.members);
    }
}
