//! The tenant actor's mailbox: `TenantMsg`, routed by flow. Each flow's commands are its own
//! enum, in that flow's `msg` module, and come in through `From`; the tenant's own messages
//! (its overview, the audit log, settled mail, fault drills) are variants here.

use std::net::IpAddr;

use uuid::Uuid;

use crate::{
    reply::TenantReply,
    tenant::{
        accounts::msg::AccountsMsg,
        audit::{AuditContext, AuditPage},
        guests::msg::GuestsMsg,
        hosted::msg::HostedMsg,
        keys::msg::KeysMsg,
        messages::{TenantInfo, TenantOverview},
        mfa::msg::MfaMsg,
        passkeys::msg::PasskeysMsg,
        passwordless::msg::PasswordlessMsg,
        sessions::msg::SessionsMsg,
        settings::msg::SettingsMsg,
        sms::msg::SmsMsg,
        step_up::msg::StepUpMsg,
        users::msg::UsersMsg,
    },
};

/// A message for a tenant actor: a flow's command, or one of the tenant's own.
pub enum TenantMsg {
    /// Registration, e-mail verification, password sign-in and the password itself.
    Accounts(crate::tenant::accounts::msg::AccountsMsg),
    /// Sessions: refresh, the access check, sign-out and the session list.
    Sessions(crate::tenant::sessions::msg::SessionsMsg),
    /// TOTP and recovery codes: setup, challenges, disabling and new codes.
    Mfa(crate::tenant::mfa::msg::MfaMsg),
    /// Step-up re-authentication: the gate, its methods and the consumed token.
    StepUp(crate::tenant::step_up::msg::StepUpMsg),
    /// Passkeys: registration, sign-in, step-up, the list and the relying-party domain.
    Passkeys(crate::tenant::passkeys::msg::PasskeysMsg),
    /// Mailed sign-in: login links and e-mailed codes.
    Passwordless(crate::tenant::passwordless::msg::PasswordlessMsg),
    /// The hosted pages: a look at a mailed link, the sign-in page, and the code exchange.
    Hosted(crate::tenant::hosted::msg::HostedMsg),
    /// Text messages: sign-in codes, phone confirmation and the dashboard's test message.
    Sms(crate::tenant::sms::msg::SmsMsg),
    /// Guests: anonymous sign-in, the claim, and the purge.
    Guests(crate::tenant::guests::msg::GuestsMsg),
    /// User management (dashboard, management keys, admin CLI) and the user's own data.
    Users(crate::tenant::users::msg::UsersMsg),
    /// The tenant's settings.
    Settings(crate::tenant::settings::msg::SettingsMsg),
    /// The signing keys.
    Keys(crate::tenant::keys::msg::KeysMsg),
    /// The OAuth client registry (dashboard and admin CLI).
    /// The authorization server: authorize, consent, token, userinfo, revoke, introspect and
    /// the user's consents.
    OAuth {
        cmd: crate::tenant::oauth::OAuthCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::oauth::OAuthAnswer>,
    },
    OAuthClients {
        cmd: crate::tenant::oauth_clients::OAuthClientCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::oauth_clients::OAuthClientAnswer>,
    },
    /// Social sign-in: the authorize route, the callback and the exchange.
    Social {
        cmd: crate::tenant::social::SocialCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::social::SocialAnswer>,
    },
    /// The tenant's configuration of a social sign-in provider (dashboard).
    SocialConfig {
        cmd: crate::tenant::social::SocialConfigCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::social::SocialProviderView>,
    },
    /// Wallet sign-in and age verification.
    Eudi {
        cmd: crate::tenant::eudi::EudiCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::eudi::EudiAnswer>,
    },
    /// Agents: the registry, their grants, their users and their activity.
    Agents {
        cmd: crate::tenant::agents::AgentCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::agents::AgentAnswer>,
    },
    /// Guardian consent for minors: the child's request, the consent page, the portal.
    Guardian {
        cmd: crate::tenant::guardian::GuardianCmd,
        /// The client's address, for the guardian routes' per-address limit.
        ip: IpAddr,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::guardian::GuardianAnswer>,
    },
    /// A portal link for a guardian who consented for that child; silently nothing otherwise.
    GuardianManagementLink {
        child_email: String,
        guardian_email: String,
        ip: IpAddr,
        ctx: AuditContext,
        reply: TenantReply<()>,
    },
    /// Organizations: the tenant's admins' (organizations, members, invitations, roles) and
    /// the users' (their list, the switch, invitations).
    Organizations {
        cmd: crate::tenant::organizations::msg::OrgCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::organizations::msg::OrgAnswer>,
    },
    /// Single sign-on: organizations' connections (admins), home-realm discovery, and the
    /// sign-ins through them.
    Sso {
        cmd: crate::tenant::sso::msg::SsoCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::sso::msg::SsoAnswer>,
    },
    /// Webhooks: the endpoints, the delivery log, and the worker's due deliveries and
    /// outcomes.
    Webhooks {
        cmd: crate::tenant::webhooks::WebhookCmd,
        ctx: AuditContext,
        reply: TenantReply<crate::tenant::webhooks::WebhookAnswer>,
    },
    /// Delivery is done with a queued message (sent, or given up). No reply.
    MailSettled { id: Uuid },
    /// Appends an audit event for something that happened outside the tenant (a dashboard
    /// login, a member change, a key rotation).
    AppendAudit {
        event_type: String,
        ctx: AuditContext,
        fields: Vec<String>,
        metadata: serde_json::Value,
        reply: TenantReply<()>,
    },
    ListAudit {
        cursor: Option<Vec<u8>>,
        limit: usize,
        event_type: Option<String>,
        reply: TenantReply<AuditPage>,
    },
    /// The tenant's platform facts and its settings.
    GetOverview { reply: TenantReply<TenantOverview> },
    /// The directory changed a platform fact (tier, API key). No reply.
    UpdateInfo { info: TenantInfo },
    /// Crashes the actor when fault injection is enabled; otherwise answers an error.
    InjectPanic { reply: TenantReply<()> },
    /// Holds the actor's mailbox for `millis` when fault injection is enabled (a slow tenant);
    /// otherwise answers an error.
    InjectStall { millis: u64, reply: TenantReply<()> },
}

impl From<AccountsMsg> for TenantMsg {
    fn from(msg: AccountsMsg) -> Self {
        TenantMsg::Accounts(msg)
    }
}

impl From<GuestsMsg> for TenantMsg {
    fn from(msg: GuestsMsg) -> Self {
        TenantMsg::Guests(msg)
    }
}

impl From<HostedMsg> for TenantMsg {
    fn from(msg: HostedMsg) -> Self {
        TenantMsg::Hosted(msg)
    }
}

impl From<KeysMsg> for TenantMsg {
    fn from(msg: KeysMsg) -> Self {
        TenantMsg::Keys(msg)
    }
}

impl From<MfaMsg> for TenantMsg {
    fn from(msg: MfaMsg) -> Self {
        TenantMsg::Mfa(msg)
    }
}

impl From<PasskeysMsg> for TenantMsg {
    fn from(msg: PasskeysMsg) -> Self {
        TenantMsg::Passkeys(msg)
    }
}

impl From<PasswordlessMsg> for TenantMsg {
    fn from(msg: PasswordlessMsg) -> Self {
        TenantMsg::Passwordless(msg)
    }
}

impl From<SessionsMsg> for TenantMsg {
    fn from(msg: SessionsMsg) -> Self {
        TenantMsg::Sessions(msg)
    }
}

impl From<SettingsMsg> for TenantMsg {
    fn from(msg: SettingsMsg) -> Self {
        TenantMsg::Settings(msg)
    }
}

impl From<SmsMsg> for TenantMsg {
    fn from(msg: SmsMsg) -> Self {
        TenantMsg::Sms(msg)
    }
}

impl From<StepUpMsg> for TenantMsg {
    fn from(msg: StepUpMsg) -> Self {
        TenantMsg::StepUp(msg)
    }
}

impl From<UsersMsg> for TenantMsg {
    fn from(msg: UsersMsg) -> Self {
        TenantMsg::Users(msg)
    }
}
