//! The credential inventory: every kind of thing that can sign a person in or act for them,
//! as one exhaustive type, and what each path that ends a holder's hold does with each kind.
//!
//! Three paths end a hold: the erasure of the user, the recovery of an address by its owner
//! (a reset link, a login link or code, or an admin's confirmation of the address, on an
//! account that never confirmed it: whoever held it may have registered an address they do
//! not own), and an admin's block. Each walks [`Credential::ALL`] and asks [`Credential::fate`]
//! what to do with each kind; the removal of each kind is one arm of one `match`
//! (`TenantCtx::clear_held`), and what a user holds of each kind is another
//! (`TenantCtx::stored`). A new kind is a new variant: nothing compiles until the fate on each
//! path, the removal and the inspection say what to do with it.
//!
//! The door in front: an account whose e-mail address is not confirmed adds no durable
//! credential ([`Credential::durable`]), so there is little to remove when its address's owner
//! turns up; what it holds from before (a guest's, or one an admin unconfirmed) goes then.

use serde::{Serialize, Serializer};
use strum::{EnumIter, IntoEnumIterator};

/// Everything that can sign a person in or act for them. Its name in answers and audit
/// events is [`Credential::as_str`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, EnumIter)]
pub enum Credential {
    /// The password (its Argon2id hash).
    Password,
    /// First-party sessions: refresh-token families and the access tokens bound to them by
    /// `sid` (the hosted sign-in cookie names one too).
    Sessions,
    /// OAuth clients' grants: the authorization server's refresh-token families.
    OAuthGrants,
    /// Authorization codes issued and not yet redeemed.
    OAuthCodes,
    /// Consents to OAuth clients: the next authorization skips the consent screen.
    OAuthConsents,
    /// The TOTP authenticator: the seed in use and one being set up.
    Totp,
    /// MFA recovery codes.
    RecoveryCodes,
    /// A confirmed phone number, which signs in by text message.
    Phone,
    /// Passkeys: the credential, its use record and its credential-id index.
    Passkeys,
    /// Linked social provider accounts and the provider tokens kept for them.
    SocialLinks,
    /// Social sign-ins under way for the user: exchange tokens not yet traded and link
    /// tickets not yet used.
    SocialSignIns,
    /// Accounts at organizations' identity providers (SAML, OpenID) linked to the user.
    SsoLinks,
    /// Single sign-ons completed for the user whose exchange codes were not yet traded.
    SsoSignIns,
    /// Wallet identities linked to the user, and the attributes they attested.
    WalletLinks,
    /// Wallet sign-ins that completed for the user and wait for the client's poll.
    WalletSignIns,
    /// Consents to agents (the consent store's records for `agt_` clients) and what the user
    /// and each agent have to do with each other.
    AgentConsents,
    /// CIBA and device requests naming the user, waiting or approved and not yet polled.
    AgentRequests,
    /// Live tokens agents hold to act for the user.
    AgentTokens,
    /// Single-use challenges and tokens of the user: MFA challenges, step-up codes, links and
    /// tokens, login links and their codes, phone confirmation codes.
    Challenges,
    /// Mailed verification and reset links.
    MailedLinks,
    /// A guardian's links for a minor's account: the consent link, the portal, the export.
    GuardianLinks,
    /// Known devices: tokens a password sign-in gave a device, which let it past the
    /// account's lockout (they sign nobody in by themselves).
    DeviceTokens,
}

/// A path that ends a holder's hold on an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The user is erased (an admin, the user, a guardian, the purges).
    Erasure,
    /// The owner of an address the account never confirmed proved it: whoever held the
    /// account keeps no way in.
    Recovery,
    /// An admin blocked the account.
    Block,
}

/// What an ending does with one kind of credential.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Removed (tokens are denylisted until they would have expired).
    Remove,
    /// Kept; the reason says why that leaves the holder no way in.
    Keep(&'static str),
}

/// Why a blocked account's credential may stay: every sign-in ends in `sign_in`, which
/// refuses a blocked user, and every token path checks `UserRecord::suspended`.
const BLOCK_GATE: &str =
    "sign_in and every token path refuse a blocked user; unblocking restores it";

impl Credential {
    /// Every kind, in declaration order.
    pub fn all() -> impl Iterator<Item = Credential> {
        Credential::iter()
    }

    /// Its name in answers and audit events.
    pub fn as_str(self) -> &'static str {
        match self {
            Credential::Password => "password",
            Credential::Sessions => "sessions",
            Credential::OAuthGrants => "oauth_grants",
            Credential::OAuthCodes => "oauth_codes",
            Credential::OAuthConsents => "oauth_consents",
            Credential::Totp => "totp",
            Credential::RecoveryCodes => "recovery_codes",
            Credential::Phone => "phone",
            Credential::Passkeys => "passkeys",
            Credential::SocialLinks => "social_links",
            Credential::SocialSignIns => "social_sign_ins",
            Credential::SsoLinks => "sso_links",
            Credential::SsoSignIns => "sso_sign_ins",
            Credential::WalletLinks => "wallet_links",
            Credential::WalletSignIns => "wallet_sign_ins",
            Credential::AgentConsents => "agent_consents",
            Credential::AgentRequests => "agent_requests",
            Credential::AgentTokens => "agent_tokens",
            Credential::Challenges => "challenges",
            Credential::MailedLinks => "mailed_links",
            Credential::GuardianLinks => "guardian_links",
            Credential::DeviceTokens => "device_tokens",
        }
    }

    /// Whether an account whose e-mail address is not confirmed may not add one of these:
    /// what outlives a session and would keep its holder a way in after the address's owner
    /// proves it. Sessions, codes and links come and go; these stay.
    pub fn durable(self) -> bool {
        match self {
            Credential::Totp
            | Credential::RecoveryCodes
            | Credential::Phone
            | Credential::Passkeys
            | Credential::SocialLinks
            | Credential::SsoLinks
            | Credential::WalletLinks
            | Credential::OAuthConsents
            | Credential::AgentConsents => true,
            Credential::Password
            | Credential::Sessions
            | Credential::OAuthGrants
            | Credential::OAuthCodes
            | Credential::SocialSignIns
            | Credential::SsoSignIns
            | Credential::WalletSignIns
            | Credential::AgentRequests
            | Credential::AgentTokens
            | Credential::Challenges
            | Credential::MailedLinks
            | Credential::GuardianLinks
            | Credential::DeviceTokens => false,
        }
    }

    /// What `ending` does with this kind.
    pub fn fate(self, ending: Ending) -> Fate {
        use Ending::{Block, Erasure, Recovery};
        match self {
            // The password: a reset sets the owner's own right after; a login link or code
            // and an admin's confirmation leave none (the owner sets one with a reset link).
            Credential::Password => match ending {
                Erasure | Recovery => Fate::Remove,
                Block => Fate::Keep(BLOCK_GATE),
            },
            // Live tokens end on every path: a block must not wait for them to expire.
            Credential::Sessions
            | Credential::OAuthGrants
            | Credential::OAuthCodes
            | Credential::AgentTokens
            | Credential::SocialSignIns
            | Credential::SsoSignIns
            | Credential::WalletSignIns
            | Credential::Challenges => Fate::Remove,
            Credential::OAuthConsents
            | Credential::Totp
            | Credential::RecoveryCodes
            | Credential::Phone
            | Credential::Passkeys
            | Credential::SocialLinks
            | Credential::SsoLinks
            | Credential::WalletLinks
            | Credential::AgentConsents
            | Credential::AgentRequests => match ending {
                Erasure | Recovery => Fate::Remove,
                Block => Fate::Keep(BLOCK_GATE),
            },
            // Links mailed to the address: the owner's mailbox holds them, but they were
            // issued to the account as it was; a block keeps them (using one signs nobody in
            // while blocked).
            Credential::MailedLinks => match ending {
                Erasure | Recovery => Fate::Remove,
                Block => Fate::Keep(BLOCK_GATE),
            },
            // A guardian's links act for a minor's account on the guardian's behalf: mailed to
            // the guardian, not to the holder. Recovery keeps them (the account stays under the
            // hold its registration declared, and only the guardian can lift it); a block
            // keeps them (the guardian may still withdraw, export or delete).
            // A known device of the account as it was: whoever held it before its owner proved
            // the address must keep no way past a lockout. A block keeps them (they open
            // nothing while blocked).
            Credential::DeviceTokens => match ending {
                Erasure | Recovery => Fate::Remove,
                Block => Fate::Keep(BLOCK_GATE),
            },
            Credential::GuardianLinks => match ending {
                Erasure => Fate::Remove,
                Recovery => Fate::Keep(
                    "the guardian's, mailed to the guardian: the account's hold stays the guardian's to lift",
                ),
                Block => Fate::Keep("the guardian may still withdraw, export or delete"),
            },
        }
    }
}

impl Serialize for Credential {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erasure_removes_every_kind() {
        for kind in Credential::all() {
            assert_eq!(kind.fate(Ending::Erasure), Fate::Remove, "{kind}");
        }
    }

    #[test]
    fn recovery_keeps_only_the_guardians_links() {
        let kept: Vec<Credential> = Credential::all()
            .filter(|k| k.fate(Ending::Recovery) != Fate::Remove)
            .collect();
        assert_eq!(kept, vec![Credential::GuardianLinks]);
    }

    #[test]
    fn a_block_ends_every_live_token() {
        for kind in [
            Credential::Sessions,
            Credential::OAuthGrants,
            Credential::OAuthCodes,
            Credential::AgentTokens,
            Credential::Challenges,
        ] {
            assert_eq!(kind.fate(Ending::Block), Fate::Remove, "{kind}");
        }
    }

    #[test]
    fn every_durable_kind_goes_at_recovery() {
        for kind in Credential::all().filter(|k| k.durable()) {
            assert_eq!(kind.fate(Ending::Recovery), Fate::Remove, "{kind}");
        }
    }

    #[test]
    fn answers_name_each_kind_as_its_name_says() {
        for kind in Credential::all() {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::json!(kind.as_str())
            );
        }
        assert_eq!(Credential::OAuthGrants.as_str(), "oauth_grants");
    }

    #[test]
    fn names_are_distinct() {
        let names: std::collections::BTreeSet<&str> =
            Credential::all().map(Credential::as_str).collect();
        assert_eq!(names.len(), Credential::all().count());
    }
}
