//! Where every record keeps sealed values: the table a master-key rotation walks
//! (`tessera_storage::rotation`). A record type that gains a sealed field adds its path here;
//! a rotation that meets a sealed value the table misses is refused before it writes anything.

use tessera_storage::{Kind, SealedField};

/// Every sealed field, by record kind. Paths are JSON field names; `*` is any enum variant.
pub const SEALED_FIELDS: &[SealedField] = &[
    SealedField {
        kind: Kind::Idempotency,
        name: "onboarding_responses",
        paths: &[&["response"]],
    },
    SealedField {
        kind: Kind::User,
        name: "user_fields",
        paths: &[
            &["date_of_birth"],
            &["age_verification_token"],
            &["totp_seed"],
            &["totp_pending"],
        ],
    },
    SealedField {
        kind: Kind::DashboardAccount,
        name: "dashboard_totp",
        paths: &[&["totp", "seed"], &["totp_pending"]],
    },
    SealedField {
        kind: Kind::TenantSecret,
        name: "tenant_secrets",
        paths: &[&["sealed"]],
    },
    SealedField {
        kind: Kind::SigningKey,
        name: "signing_keys",
        paths: &[&["sealed"]],
    },
    SealedField {
        kind: Kind::MailQueue,
        name: "queued_mail",
        paths: &[&["sealed"]],
    },
    SealedField {
        kind: Kind::Usage,
        name: "decoys",
        paths: &[&["sealed"]],
    },
    SealedField {
        kind: Kind::SocialProvider,
        name: "social_provider_secrets",
        paths: &[&["secret"]],
    },
    SealedField {
        kind: Kind::SsoConnection,
        name: "sso_connection_secrets",
        paths: &[
            &["protocol", "*", "sp_key"],
            &["protocol", "*", "client_secret"],
        ],
    },
    SealedField {
        kind: Kind::SocialToken,
        name: "social_tokens",
        paths: &[&["sealed"]],
    },
    SealedField {
        kind: Kind::EudiVerifier,
        name: "wallet_verifier_keys",
        paths: &[&["sealed_key"]],
    },
    SealedField {
        kind: Kind::EudiTx,
        name: "wallet_transactions",
        paths: &[&["enc_key"], &["outcome", "*", "sealed_token"]],
    },
    SealedField {
        kind: Kind::EudiClaims,
        name: "wallet_claims",
        paths: &[&["sealed"]],
    },
    SealedField {
        kind: Kind::WebhookEndpoint,
        name: "webhook_secrets",
        paths: &[&["secret"], &["previous_secret"]],
    },
    SealedField {
        kind: Kind::GuardianToken,
        name: "guardian_exports",
        paths: &[&["archive"]],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_listed_once() {
        // A rotation takes the first entry of a kind: a second one would never be read.
        for (i, f) in SEALED_FIELDS.iter().enumerate() {
            assert!(
                SEALED_FIELDS[i + 1..].iter().all(|g| g.kind != f.kind),
                "{:?} is listed twice",
                f.kind
            );
            assert!(!f.paths.is_empty() && f.paths.iter().all(|p| !p.is_empty()));
        }
    }
}
