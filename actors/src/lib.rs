//! Tessera's actors: the platform [`directory`] and one [`tenant`] supervisor per tenant.
//!
//! Handlers in the binary never touch storage: they hold a [`DirectoryHandle`] or a
//! [`TenantHandle`], send one message and render the reply. Every call has a timeout, and a
//! dead or slow actor comes back as [`CallError::Unavailable`], never as a hang.

pub mod directory;
pub mod error;
pub mod handle;
pub mod known_devices;
pub mod login_guard;
pub mod outbound;
pub mod password;
pub mod policy;
pub mod published;
pub mod records;
pub mod reply;
pub mod sealed_fields;
pub mod second_factor;
pub mod tenant;
pub mod throttle;

pub use directory::{Directory, DirectoryArgs, DirectoryMsg};
pub use error::{
    AgentError, CallError, DirectoryError, GuardianError, GuestError, MfaError, OAuthClientError,
    OrgError, PasskeyError, SettingsError, SmsError, SocialError, SsoError, TenantError, UserError,
    WebhookError,
};
pub use handle::{DirectoryHandle, TenantHandle};
pub use password::{is_argon2id_phc, Password, PasswordHasher, PoolLimits};
pub use tenant::TenantMsg;
