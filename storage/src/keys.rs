//! Every storage key is built here, and nowhere else.
//!
//! Layout (all big-endian so prefixes scan in order):
//! - platform tree: `kind (1 byte) | key`
//! - tenant tree:   `tenant id (16 bytes) | kind (1 byte) | key`
//!
//! Invariant: a tenant key always starts with the 16 bytes of its tenant id; the only code that
//! prepends them is [`tenant_key`], called by `TenantStore` with its own id.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A tenant's identity in keys and records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TenantId(pub Uuid);

impl TenantId {
    /// A fresh, time-ordered id (UUID v7), so tenants scan in creation order.
    pub fn new() -> Self {
        TenantId(Uuid::now_v7())
    }

    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }
}

impl Default for TenantId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for TenantId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The kind of a record: one byte in its key. Values are part of the on-disk format: never
/// renumber, only add.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    // Platform records.
    Tenant = 0x01,
    TenantSlug = 0x02,
    ApiKeyIndex = 0x03,
    DashboardAccount = 0x04,
    DashboardEmail = 0x05,
    Idempotency = 0x06,
    DashboardSession = 0x07,
    Membership = 0x08,
    Invite = 0x09,
    /// `tenant id | e-mail` -> a pending invitation's summary.
    PendingInvite = 0x0A,
    /// A mailed dashboard-account token (verification, password reset), by its hash.
    DashboardAccountToken = 0x0B,
    /// `throttle | key` -> a dashboard login throttle's counts (failures, block).
    PlatformThrottle = 0x0C,
    /// `tenant id | key id` -> a tenant's management key (its hash, never the key).
    ManagementKey = 0x0D,
    /// Resource id -> a resource of the scope catalog (RFC 8707 indicator, owner tenant).
    Resource = 0x0E,
    /// `resource id | scope id` -> a catalog entry.
    CatalogScope = 0x0F,
    /// `account id | device id` -> a dashboard account's known device (its token's hash).
    DashboardDevice = 0x10,
    // Tenant records.
    TenantSettings = 0x40,
    AuditEvent = 0x41,
    TenantSecret = 0x42,
    /// An end user, by user id.
    User = 0x43,
    /// Normalised e-mail address -> user id.
    UserEmail = 0x44,
    /// A session (refresh-token family), by session id.
    Session = 0x45,
    /// `user id | session id` -> (): a user's sessions.
    UserSession = 0x46,
    /// A token-signing key, by key id.
    SigningKey = 0x47,
    /// A single-use link token (e-mail verification, password reset), by the token's hash.
    LinkToken = 0x48,
    /// A sealed message waiting for delivery, by message id.
    MailQueue = 0x49,
    /// Usage counters (monthly active users), by name.
    Usage = 0x4A,
    /// `user id` -> (): the tenant's guests, for the purge.
    Guest = 0x4B,
    /// `slot | purpose` -> a single-use challenge (MFA, step-up) or an issued step-up token.
    Challenge = 0x4C,
    /// E.164 phone number -> user id: the confirmed numbers, for SMS login.
    UserPhone = 0x4D,
    /// `throttle | key` -> an end-user throttle's counts (failures, block).
    Throttle = 0x4E,
    /// `created_at (u64 ns, big-endian) | user id` -> (): users newest first, for listing.
    UserCreated = 0x4F,
    /// `user id | audit event key` -> (): the audit events about a user, for the export and
    /// the erasure.
    UserAudit = 0x50,
    /// One-off markers of tenant-level index builds, by name.
    TenantIndexBuilt = 0x51,
    /// `user id | passkey id` -> a user's WebAuthn credential.
    Passkey = 0x52,
    /// SHA-256 of a WebAuthn credential id -> its user and passkey.
    PasskeyCredential = 0x53,
    /// Client id -> a registered OAuth client (its secret's hash, never the secret).
    OAuthClient = 0x54,
    /// `user id | client id` -> the scopes and resources the user granted that client.
    OAuthConsent = 0x55,
    /// SHA-256 of an authorization code -> what it grants (kept a while after its use, to
    /// recognise a second one).
    OAuthCode = 0x56,
    /// Provider name -> the tenant's configuration of a social sign-in provider (its secret
    /// sealed).
    SocialProvider = 0x57,
    /// SHA-256 of a social sign-in's `state` -> the flow waiting for the provider's callback.
    SocialState = 0x58,
    /// An exchange token's `jti` -> the user it signs in, until it is traded or expires.
    SocialExchange = 0x59,
    /// `provider | 0 | subject` -> the user a provider account is linked to.
    SocialIdentity = 0x5A,
    /// `user id | provider` -> the subject: a user's linked provider accounts.
    UserIdentity = 0x5B,
    /// SHA-256 of a link ticket -> the signed-in user a provider is to be linked to.
    SocialLinkTicket = 0x5C,
    /// `provider | 0 | subject` -> a linked account's provider tokens, sealed (kept only when
    /// the tenant's configuration asks).
    SocialToken = 0x5D,
    /// Agent id -> a registered agent (its secret's hash, never the secret).
    Agent = 0x5E,
    /// `agent id | jti` -> a token an agent holds, until it expires.
    AgentToken = 0x5F,
    /// `jti` -> a denylisted agent token, until it would have expired.
    AgentDenied = 0x60,
    /// `agent id | time | sequence` -> one entry of an agent's activity feed.
    AgentAction = 0x61,
    /// `user id | agent id` -> what a user and an agent have to do with each other.
    UserAgent = 0x62,
    /// SHA-256 of an `auth_req_id` or `device_code` -> a CIBA or device request.
    AgentRequest = 0x63,
    /// `u` + user code, `l` + link hash, `i` + request id -> the key of an agent request.
    AgentRequestIndex = 0x64,
    /// Event id -> an event waiting for delivery to the tenant's webhooks.
    OutboundEvent = 0x65,
    /// `verifier` -> the tenant's wallet verifier key (sealed) and certificate chain.
    EudiVerifier = 0x66,
    /// A request id's random part -> a wallet transaction.
    EudiTx = 0x67,
    /// SHA-256 of a client's poll state -> the key of its wallet transaction.
    EudiPoll = 0x68,
    /// Keyed hash of (issuer, identifier) -> the user a wallet identity signs in as.
    EudiSubject = 0x69,
    /// User id -> the attributes a wallet attested (sealed).
    EudiClaims = 0x6A,
    /// SHA-256 of an age-verification token -> what it proves, until used.
    AgeToken = 0x6B,
    /// Endpoint id -> one of the tenant's webhook endpoints (its secrets sealed).
    WebhookEndpoint = 0x6C,
    /// `endpoint id | event id` -> one event's delivery to one endpoint: its attempts and
    /// outcome (the delivery log).
    WebhookDelivery = 0x6D,
    /// `next attempt (u64 ms, big-endian) | endpoint id | event id` -> nothing: the pending
    /// deliveries in the order they are due.
    WebhookDue = 0x6E,
    /// SHA-256 of a guardian's link token (consent, portal, export download) -> its record.
    GuardianToken = 0x6F,
    /// User id -> when a guardian declined for that minor (the account goes 30 days later).
    ChildBlocked = 0x70,
    /// `user id | passkey id` -> what the passkey's sign-ins changed: its signature counter,
    /// backup flags, last use, and the clone mark.
    PasskeyUse = 0x71,
    /// `user id | device id` -> a known device's token (its hash) and expiry.
    DeviceToken = 0x72,
    /// Organization id -> one of the tenant's organizations (its customers' companies).
    Organization = 0x73,
    /// `organization id | user id` -> a membership: the member's role in the organization.
    OrgMember = 0x74,
    /// `user id | organization id` -> (): a user's organizations.
    UserOrg = 0x75,
    /// Role name -> the permissions a role of the tenant's organizations grants.
    OrgRole = 0x76,
    /// SHA-256 of an invitation's token -> the invitation to join an organization.
    OrgInvite = 0x77,
    /// `organization id | e-mail` -> the hash of the pending invitation to that address.
    OrgPendingInvite = 0x78,
    /// `organization id | domain` -> a domain an organization claims, and its proof.
    OrgDomain = 0x79,
    /// Domain -> the organization that proved it (one per tenant).
    VerifiedDomain = 0x7A,
    /// `user id | organization id` -> (): a member an admin removed, whom the organization's
    /// domain does not add again.
    OrgDeparted = 0x7B,
    /// External id -> the organization that bears it (unique in the tenant).
    OrgExternalId = 0x7C,
    /// Connection id -> an organization's single sign-on connection (SAML or OpenID), its
    /// secrets sealed.
    SsoConnection = 0x7D,
    /// `organization id | connection id` -> (): an organization's connections.
    OrgConnection = 0x7E,
    /// SHA-256 of a single sign-on's `state` (SAML: its RelayState) -> the sign-in under way.
    SsoState = 0x7F,
    /// SHA-256 of `connection id | assertion ID` -> until when a SAML assertion is refused
    /// again (the replay cache, on disk so it outlives a restart).
    SsoReplay = 0x80,
    /// `connection id | SHA-256 of the subject` -> the user an identity provider's account
    /// signs in as.
    SsoIdentity = 0x81,
    /// `user id | connection id` -> the subject's hash: a user's single sign-on links.
    UserSso = 0x82,
    /// SHA-256 of a single sign-on's exchange code -> the sign-in it trades for a session.
    SsoExchange = 0x83,
}

/// The key of a platform record.
pub fn platform_key(kind: Kind, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + key.len());
    out.push(kind as u8);
    out.extend_from_slice(key);
    out
}

/// The key of a tenant record. Only `TenantStore` calls this, always with its own id.
pub(crate) fn tenant_key(tenant: &TenantId, kind: Kind, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(17 + key.len());
    out.extend_from_slice(tenant.as_bytes());
    out.push(kind as u8);
    out.extend_from_slice(key);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_keys_start_with_the_tenant_id_then_the_kind() {
        let t = TenantId::new();
        let k = tenant_key(&t, Kind::TenantSettings, b"x");
        assert_eq!(&k[..16], t.as_bytes());
        assert_eq!(k[16], Kind::TenantSettings as u8);
        assert_eq!(&k[17..], b"x");
    }

    #[test]
    fn platform_keys_start_with_the_kind() {
        assert_eq!(
            platform_key(Kind::TenantSlug, b"acme"),
            b"\x02acme".to_vec()
        );
    }
}
