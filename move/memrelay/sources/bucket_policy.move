/// The developer console's private buckets: a policy per bucket (its admins and access groups) and access groups
/// whose members read or read-write the bucket. The console sponsors these calls; its service keys sign them.
module memrelay::bucket_policy;

use std::string::String;

const ENotAdmin: u64 = 1;
const EWrongBucket: u64 = 2;
const EBadScope: u64 = 3;
const EAlreadyAdmin: u64 = 4;
const ENoAccess: u64 = 5;
const ELastAdmin: u64 = 6;
const EFull: u64 = 7;

const SCOPE_READWRITE: u8 = 1;
const MAX_MEMBERS: u64 = 1000;

public struct BucketPolicy has key {
    id: UID,
    bucket_id: String,
    space_id: String,
    admins: vector<address>,
    groups: vector<ID>,
}

public struct AccessGroup has key {
    id: UID,
    bucket_id: String,
    policy_id: ID,
    admins: vector<address>,
    members: vector<Member>,
}

/// scope: 0 read, 1 read-write.
public struct Member has store, copy, drop {
    address: address,
    scope: u8,
}

entry fun create_policy(bucket_id: String, space_id: String, ctx: &mut TxContext) {
    transfer::share_object(BucketPolicy { id: object::new(ctx), bucket_id, space_id, admins: vector[ctx.sender()], groups: vector[] });
}

entry fun create_group(policy: &mut BucketPolicy, bucket_id: String, ctx: &mut TxContext) {
    assert!(policy.bucket_id == bucket_id, EWrongBucket);
    assert!(policy.admins.contains(&ctx.sender()), ENotAdmin);
    assert!(policy.groups.length() < MAX_MEMBERS, EFull);
    let group = AccessGroup { id: object::new(ctx), bucket_id, policy_id: object::id(policy), admins: vector[ctx.sender()], members: vector[] };
    policy.groups.push_back(object::id(&group));
    transfer::share_object(group);
}

/// Adds or re-scopes `recipient`. A transaction grants several groups with one call per group.
entry fun grant_access(group: &mut AccessGroup, recipient: address, scope: u8, ctx: &TxContext) {
    assert!(group.admins.contains(&ctx.sender()), ENotAdmin);
    assert!(scope <= SCOPE_READWRITE, EBadScope);
    remove_member(group, recipient);
    assert!(group.members.length() < MAX_MEMBERS, EFull);
    group.members.push_back(Member { address: recipient, scope });
}

entry fun share_admin(group: &mut AccessGroup, member: address, ctx: &TxContext) {
    assert!(group.admins.contains(&ctx.sender()), ENotAdmin);
    assert!(!group.admins.contains(&member), EAlreadyAdmin);
    assert!(group.admins.length() < MAX_MEMBERS, EFull);
    group.admins.push_back(member);
}

/// Takes away `member`'s access, as member or admin; a group keeps at least one admin.
entry fun unshare(group: &mut AccessGroup, member: address, ctx: &TxContext) {
    revoke(group, member, ctx);
}

/// The same for a service signer (a console service key) that was granted access.
entry fun unshare_service_signer(group: &mut AccessGroup, service_signer: address, ctx: &TxContext) {
    revoke(group, service_signer, ctx);
}

fun revoke(group: &mut AccessGroup, who: address, ctx: &TxContext) {
    assert!(group.admins.contains(&ctx.sender()), ENotAdmin);
    let was_member = remove_member(group, who);
    let (was_admin, at) = group.admins.index_of(&who);
    assert!(was_member || was_admin, ENoAccess);
    if (was_admin) {
        assert!(group.admins.length() > 1, ELastAdmin);
        group.admins.remove(at);
    };
}

fun remove_member(group: &mut AccessGroup, who: address): bool {
    let found = group.members.find_index!(|m| m.address == who);
    if (found.is_some()) {
        group.members.remove(found.destroy_some());
        true
    } else false
}
