//! The tenant's whole command surface: one variant per command, each with its reply port.

use ractor::RpcReplyPort;
use serde::{Deserialize, Serialize};
use tessera_storage::TenantId;
use time::OffsetDateTime;

use crate::{
    error::TenantError,
    records::Tier,
    tenant::{
        audit::{AuditContext, AuditPage},
        settings::{SettingsChange, TenantSettings},
    },
};

/// The platform's facts about a tenant, handed to its actor by the directory.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TenantInfo {
    pub id: TenantId,
    pub slug: String,
    pub name: String,
    pub tier: Tier,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub api_key_prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    pub api_key_created_at: OffsetDateTime,
}

/// The tenant as its own API key sees it.
#[derive(Clone, Debug)]
pub struct TenantOverview {
    pub info: TenantInfo,
    pub settings: TenantSettings,
}

/// The settings as the dashboard sees them: secrets only as "set or not".
#[derive(Clone, Debug)]
pub struct SettingsView {
    pub settings: TenantSettings,
    pub byok_token_set: bool,
}

pub enum TenantMsg {
    GetSettings {
        reply: RpcReplyPort<Result<SettingsView, TenantError>>,
    },
    /// One settings change and its audit event, atomically.
    UpdateSettings {
        change: SettingsChange,
        ctx: AuditContext,
        reply: RpcReplyPort<Result<SettingsView, TenantError>>,
    },
    /// Appends an audit event for something that happened outside the tenant (a dashboard
    /// login, a member change, a key rotation).
    AppendAudit {
        event_type: String,
        ctx: AuditContext,
        fields: Vec<String>,
        metadata: serde_json::Value,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    ListAudit {
        cursor: Option<Vec<u8>>,
        limit: usize,
        event_type: Option<String>,
        reply: RpcReplyPort<Result<AuditPage, TenantError>>,
    },
    /// The tenant's platform facts and its settings.
    GetOverview {
        reply: RpcReplyPort<Result<TenantOverview, TenantError>>,
    },
    /// The directory changed a platform fact (tier, API key). No reply.
    UpdateInfo { info: TenantInfo },
    /// Crashes the actor when fault injection is enabled; otherwise answers an error.
    InjectPanic {
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
    /// Holds the actor's mailbox for `millis` when fault injection is enabled (a slow tenant);
    /// otherwise answers an error.
    InjectStall {
        millis: u64,
        reply: RpcReplyPort<Result<(), TenantError>>,
    },
}
