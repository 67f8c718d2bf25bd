//! The user as the API shows it: to the user (`User`, the user record) and to the tenant's
//! admins (`ManagedUser`, with its `UserStatus`). Apart from the webhook shapes because a user
//! is answered by the tenant's account flows and by its user management alike.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// The user record (`GET /v1/auth/me`, and `user` in token pairs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = UserResponse))]
pub struct User {
    pub id: Uuid,
    /// `null` for a guest.
    #[cfg_attr(feature = "schema", schema(format = "email"))]
    pub email: Option<String>,
    pub email_verified: bool,
    /// E.164.
    pub phone: Option<String>,
    pub phone_verified: bool,
    pub is_anonymous: bool,
    pub mfa_enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_sign_in_at: Option<OffsetDateTime>,
    #[cfg_attr(feature = "schema", schema(value_type = Object))]
    pub public_metadata: serde_json::Value,
}

/// A user's state as the users list shows and filters it (the first that applies, in this
/// order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserStatus {
    /// Blocked by a tenant admin.
    Blocked,
    /// Waiting for a guardian's consent (minor protection).
    Held,
    /// A guest.
    Anonymous,
    /// Registered with an address that is not confirmed yet.
    Unverified,
    Active,
}

impl UserStatus {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "active" => UserStatus::Active,
            "blocked" => UserStatus::Blocked,
            "held" => UserStatus::Held,
            "anonymous" => UserStatus::Anonymous,
            "unverified" => UserStatus::Unverified,
            _ => return None,
        })
    }

    /// The name [`UserStatus::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            UserStatus::Active => "active",
            UserStatus::Blocked => "blocked",
            UserStatus::Held => "held",
            UserStatus::Anonymous => "anonymous",
            UserStatus::Unverified => "unverified",
        }
    }
}

/// A user as the list shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ManagedUser {
    pub id: Uuid,
    pub email: Option<String>,
    pub email_verified: bool,
    /// E.164.
    pub phone: Option<String>,
    pub phone_verified: bool,
    pub is_anonymous: bool,
    /// `active`, `blocked`, `held`, `anonymous` or `unverified`.
    #[cfg_attr(feature = "schema", schema(value_type = String))]
    pub status: UserStatus,
    pub mfa_enabled: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_sign_in_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub blocked_at: Option<OffsetDateTime>,
    #[cfg_attr(feature = "schema", schema(value_type = Object))]
    pub public_metadata: serde_json::Value,
    /// Admin-only; the `app_metadata` claim of the user's access tokens.
    #[cfg_attr(feature = "schema", schema(value_type = Object))]
    pub app_metadata: serde_json::Value,
}

impl ManagedUser {
    /// The admins' view of a user: the user record with what only they see.
    pub fn of(
        user: User,
        status: UserStatus,
        blocked_at: Option<OffsetDateTime>,
        app_metadata: serde_json::Value,
    ) -> Self {
        ManagedUser {
            id: user.id,
            email: user.email,
            email_verified: user.email_verified,
            phone: user.phone,
            phone_verified: user.phone_verified,
            is_anonymous: user.is_anonymous,
            status,
            mfa_enabled: user.mfa_enabled,
            created_at: user.created_at,
            last_sign_in_at: user.last_sign_in_at,
            blocked_at,
            public_metadata: user.public_metadata,
            app_metadata,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user() -> User {
        User {
            id: Uuid::nil(),
            email: Some("ada@example.com".into()),
            email_verified: true,
            phone: None,
            phone_verified: false,
            is_anonymous: false,
            mfa_enabled: false,
            created_at: OffsetDateTime::UNIX_EPOCH,
            last_sign_in_at: None,
            public_metadata: json!({"theme": "dark"}),
        }
    }

    fn managed() -> ManagedUser {
        ManagedUser::of(user(), UserStatus::Held, None, json!({"plan": "pro"}))
    }

    #[test]
    fn the_admins_view_carries_every_field_of_the_user_record() {
        let admins = serde_json::to_value(managed()).unwrap();
        let users = serde_json::to_value(user()).unwrap();
        for (name, value) in users.as_object().unwrap() {
            assert_eq!(&admins[name], value, "{name}");
        }
        assert_eq!(admins["app_metadata"], json!({"plan": "pro"}));
    }

    #[test]
    fn a_managed_user_reads_back_what_it_sends() {
        let sent = serde_json::to_value(managed()).unwrap();
        assert_eq!(sent["status"], "held");
        assert_eq!(sent["created_at"], "1970-01-01T00:00:00Z");
        assert!(sent["last_sign_in_at"].is_null());
        let read: ManagedUser = serde_json::from_value(sent).unwrap();
        assert_eq!(read, managed());
    }

    #[test]
    fn every_status_parses_from_the_name_it_is_sent_as() {
        use UserStatus::*;
        for s in [Blocked, Held, Anonymous, Unverified, Active] {
            let name = serde_json::to_value(s).unwrap();
            assert_eq!(UserStatus::parse(name.as_str().unwrap()), Some(s));
        }
        assert_eq!(UserStatus::parse("Active"), None);
    }
}
