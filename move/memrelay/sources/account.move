/// Memory accounts: one per owner address, each listing the delegate keys that may act for it. The entry
/// functions keep the signatures of MemWal's `account` module, so clients built for MemWal call this package
/// unchanged, and Seal key servers evaluate `seal_approve` for the owner's identity.
module memrelay::account;

use std::string::String;
use sui::clock::Clock;
use sui::event;
use sui::hash::blake2b256;
use sui::table::{Self, Table};

const ENotOwner: u64 = 1;
const EAccountExists: u64 = 2;
const EAccountDeactivated: u64 = 3;
const EAccountActive: u64 = 4;
const EBadPublicKey: u64 = 5;
const EAddressMismatch: u64 = 6;
const EKeyExists: u64 = 7;
const ETooManyKeys: u64 = 8;
const ELabelTooLong: u64 = 9;
const EKeyNotFound: u64 = 10;
const ENoAccess: u64 = 11;

const MAX_DELEGATE_KEYS: u64 = 20;
const MAX_LABEL_BYTES: u64 = 64;
const ED25519_FLAG: u8 = 0;

/// Shared; maps each owner to its account so an address has at most one.
public struct AccountRegistry has key {
    id: UID,
    accounts: Table<address, ID>,
}

/// Shared; mutated by its owner only.
public struct MemWalAccount has key, store {
    id: UID,
    owner: address,
    delegate_keys: vector<DelegateKey>,
    created_at: u64,
    active: bool,
}

public struct DelegateKey has store, copy, drop {
    public_key: vector<u8>,
    sui_address: address,
    label: String,
    created_at: u64,
}

public struct AccountCreated has copy, drop { account_id: ID, owner: address }
public struct DelegateKeyAdded has copy, drop { account_id: ID, public_key: vector<u8>, sui_address: address, label: String }
public struct DelegateKeyRemoved has copy, drop { account_id: ID, public_key: vector<u8> }
public struct AccountDeactivated has copy, drop { account_id: ID, owner: address }
public struct AccountReactivated has copy, drop { account_id: ID, owner: address }

fun init(ctx: &mut TxContext) {
    transfer::share_object(AccountRegistry { id: object::new(ctx), accounts: table::new(ctx) });
}

entry fun create_account(registry: &mut AccountRegistry, clock: &Clock, ctx: &mut TxContext) {
    let owner = ctx.sender();
    assert!(!registry.accounts.contains(owner), EAccountExists);
    let account = MemWalAccount { id: object::new(ctx), owner, delegate_keys: vector[], created_at: clock.timestamp_ms(), active: true };
    let account_id = object::id(&account);
    registry.accounts.add(owner, account_id);
    event::emit(AccountCreated { account_id, owner });
    transfer::share_object(account);
}

/// `sui_address` must be the Ed25519 Sui address of `public_key` (blake2b-256 of flag 0x00 ‖ key).
entry fun add_delegate_key(
    account: &mut MemWalAccount,
    public_key: vector<u8>,
    sui_address: address,
    label: String,
    clock: &Clock,
    ctx: &TxContext,
) {
    assert!(account.owner == ctx.sender(), ENotOwner);
    assert!(account.active, EAccountDeactivated);
    assert!(public_key.length() == 32, EBadPublicKey);
    assert!(ed25519_address(&public_key) == sui_address, EAddressMismatch);
    assert!(label.length() <= MAX_LABEL_BYTES, ELabelTooLong);
    assert!(account.delegate_keys.length() < MAX_DELEGATE_KEYS, ETooManyKeys);
    assert!(find_key(account, &public_key).is_none(), EKeyExists);
    account.delegate_keys.push_back(DelegateKey { public_key, sui_address, label, created_at: clock.timestamp_ms() });
    event::emit(DelegateKeyAdded { account_id: object::id(account), public_key, sui_address, label });
}

/// Allowed on a deactivated account, so a compromised key can be purged after freezing.
entry fun remove_delegate_key(account: &mut MemWalAccount, public_key: vector<u8>, ctx: &TxContext) {
    assert!(account.owner == ctx.sender(), ENotOwner);
    let found = find_key(account, &public_key);
    assert!(found.is_some(), EKeyNotFound);
    account.delegate_keys.remove(found.destroy_some());
    event::emit(DelegateKeyRemoved { account_id: object::id(account), public_key });
}

entry fun deactivate_account(account: &mut MemWalAccount, ctx: &TxContext) {
    assert!(account.owner == ctx.sender(), ENotOwner);
    assert!(account.active, EAccountDeactivated);
    account.active = false;
    event::emit(AccountDeactivated { account_id: object::id(account), owner: account.owner });
}

entry fun reactivate_account(account: &mut MemWalAccount, ctx: &TxContext) {
    assert!(account.owner == ctx.sender(), ENotOwner);
    assert!(!account.active, EAccountActive);
    account.active = true;
    event::emit(AccountReactivated { account_id: object::id(account), owner: account.owner });
}

/// Seal policy for an owner's memories: the key id is BCS(owner); the owner or one of its delegates may decrypt
/// while the account is active.
entry fun seal_approve(id: vector<u8>, account: &MemWalAccount, ctx: &TxContext) {
    assert!(account.active, EAccountDeactivated);
    let caller = ctx.sender();
    let is_owner = caller == account.owner && id == sui::bcs::to_bytes(&account.owner);
    assert!(is_owner || is_delegate_address(account, caller), ENoAccess);
}

public fun owner(account: &MemWalAccount): address { account.owner }

public fun is_active(account: &MemWalAccount): bool { account.active }

public fun is_delegate_address(account: &MemWalAccount, addr: address): bool {
    account.delegate_keys.any!(|k| k.sui_address == addr)
}

fun find_key(account: &MemWalAccount, public_key: &vector<u8>): Option<u64> {
    account.delegate_keys.find_index!(|k| &k.public_key == public_key)
}

fun ed25519_address(public_key: &vector<u8>): address {
    let mut data = vector[ED25519_FLAG];
    data.append(*public_key);
    sui::address::from_bytes(blake2b256(&data))
}
