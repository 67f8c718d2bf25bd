//! The admin socket's wire format: one JSON object per line each way.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A command. Passwords travel only over the 0600 socket.
#[derive(Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "kebab-case")]
pub enum AdminRequest {
    /// A consistent snapshot of the database, written by the server to `out` (absolute).
    Backup {
        out: String,
    },
    /// Re-seals everything under a new master key: the key file's text (base64), which
    /// travels only over the 0600 socket.
    MasterKeyRotate {
        new_key: String,
    },
    TenantCreate {
        name: String,
        slug: Option<String>,
        owner_email: Option<String>,
        owner_password: Option<String>,
    },
    TenantList,
    /// Takes the second factor off a dashboard account (a lost authenticator).
    DashboardResetMfa {
        email: String,
    },
    TenantShow {
        slug: String,
    },
    TenantSetTier {
        slug: String,
        tier: String,
    },
    TenantSetLimits {
        slug: String,
        mau_cap: u64,
    },
    ApikeyRotate {
        slug: String,
    },
    PurgeRun {
        tenant: Option<String>,
        /// RFC 3339; default now.
        as_of: Option<String>,
        dry_run: bool,
    },
    KeysRotate {
        slug: String,
    },
    /// Registers a resource (an API a tenant's tokens may be minted for) owned by a tenant.
    ResourceRegister {
        tenant: String,
        name: String,
        uri: String,
    },
    /// The scope catalog's entries, or only those awaiting review.
    ScopeList {
        pending: bool,
    },
    /// Approves a catalog entry: it becomes grantable.
    ScopeApprove {
        resource_id: String,
        scope_id: String,
    },
    /// Marks a tenant's third-party OAuth client as checked by the operator: its consent
    /// screen says `attested` instead of `unverified`.
    OauthClientAttest {
        slug: String,
        client_id: String,
    },
    FaultPanicTenant {
        slug: String,
    },
    FaultStallTenant {
        slug: String,
        millis: u64,
    },
    /// The next batch applied to the store hangs for good inside its watched call, as sled's
    /// deadlock does: the storage watchdog's drill.
    FaultHangStorage,
    /// Users with an Argon2id hash, written to one tenant in one batch (at most
    /// `MAX_IMPORT_BATCH`); addresses that already have an account are skipped.
    UserImport {
        tenant: String,
        users: Vec<ImportLine>,
    },
    UserList {
        tenant: String,
        email: Option<String>,
        status: Option<String>,
        limit: Option<usize>,
        cursor: Option<String>,
    },
    UserShow {
        tenant: String,
        id: String,
    },
    UserBlock {
        tenant: String,
        id: String,
        block: bool,
    },
    UserDelete {
        tenant: String,
        id: String,
    },
    /// Records whose key or value holds one of the needles (a UUID is also matched as its
    /// 16 raw bytes).
    UserTraces {
        tenant: String,
        needles: Vec<String>,
    },
    /// The messages in the file outbox (or, with `sms`, the text message outbox), newest
    /// first; with `tenant`, only that tenant's.
    OutboxList {
        tenant: Option<String>,
        #[serde(default)]
        sms: bool,
    },
    /// One message of the file outbox, whole: its headers, text and links. `id` is the
    /// listing's `file` or its UUID.
    OutboxShow {
        id: String,
    },
    /// Sets a tenant's wallet verifier key and chain (PEM texts read by the CLI).
    EudiSetVerifier {
        slug: String,
        key_pem: String,
        chain_pem: String,
    },
    /// Makes and sets a development verifier chain.
    EudiDevCert {
        slug: String,
        days: u32,
    },
    EudiShow {
        slug: String,
    },
}

/// One line of `tessera admin user import`'s JSON Lines input.
#[derive(Serialize, Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub struct ImportLine {
    pub email: String,
    /// An Argon2id PHC string (`$argon2id$v=19$m=...,t=...,p=...$salt$hash`).
    pub password_hash: String,
    #[serde(default)]
    pub email_verified: bool,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct AdminError {
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct AdminResponse {
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AdminError>,
}
