//! The values that cross the mailbox with the commands: a transaction as the request object
//! and the QR page show it, what the response route needs to check an answer, the checked
//! outcome it hands back, and the answers, the poll's among them.

use std::sync::Arc;

use time::OffsetDateTime;
use zeroize::Zeroizing;

use super::records::{Eidas, EudiPurpose, VerifierIdentity};
use crate::tenant::{
    messages::LoginOutcome,
    settings::{EudiAgeConfig, EudiConfig},
};

/// A transaction as the request object is built from it.
#[derive(Clone, Debug)]
pub struct TxView {
    pub purpose: EudiPurpose,
    pub request_id: String,
    pub oid_state: String,
    pub nonce: String,
    /// The public half of the transaction's encryption key, `kid` = the request id.
    pub enc_jwk: serde_json::Value,
    pub expires_at: OffsetDateTime,
    pub same_device: bool,
    pub verifier: Arc<VerifierIdentity>,
    /// The tenant's wallet configuration (what the DCQL query asks for), and its purpose text.
    pub config: EudiConfig,
    pub purpose_text: Option<String>,
    /// For the QR page.
    pub tenant_name: String,
    pub default_locale: String,
}

/// What the response route needs to check an answer.
pub struct Opening {
    pub tx: TxView,
    pub enc_key: Zeroizing<Vec<u8>>,
    pub config: EudiConfig,
    pub age: EudiAgeConfig,
}

impl std::fmt::Debug for Opening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Opening(..)")
    }
}

/// A verified wallet identity.
#[derive(Clone)]
pub struct WalletIdentity {
    /// The trust anchor's `issuer`.
    pub issuer: String,
    /// What identifies the person at that issuer (hashed, never stored as is).
    pub identifier: String,
    /// The requested attributes the wallet disclosed.
    pub claims: serde_json::Map<String, serde_json::Value>,
    /// The lower of the anchor's and the credential's level.
    pub level: Eidas,
    /// An attested address, normalized by the actor.
    pub email: Option<String>,
}

/// Names and attributes stay out of logs.
impl std::fmt::Debug for WalletIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WalletIdentity")
            .field("issuer", &self.issuer)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

/// The checked outcome of a wallet's answer.
#[derive(Clone, Debug)]
pub enum WalletOutcome {
    Login(Box<WalletIdentity>),
    /// `Some(over)`: age established against [`AGE_THRESHOLD`]; `None`: not determinable.
    ///
    /// [`AGE_THRESHOLD`]: super::records::AGE_THRESHOLD
    Age(Option<bool>),
}

/// What a poll finds.
pub enum PollAnswer {
    Pending,
    Expired,
    NotFound,
    /// The sign-in, on the first poll after the wallet answered; `None` afterwards.
    Consumed(Option<Box<LoginOutcome>>),
    /// The token on the first poll after the wallet answered; `None` afterwards.
    Determined(Option<String>),
    Fallback,
}

pub enum EudiAnswer {
    VerifierSet(Arc<VerifierIdentity>),
    Verifier(Option<Arc<VerifierIdentity>>),
    Begun {
        tx: TxView,
        state: String,
    },
    Tx(TxView),
    Opened(Box<Opening>),
    /// Same-device: where the wallet sends the browser.
    Completed {
        redirect_uri: Option<String>,
    },
    Poll(PollAnswer),
}

/// Tokens, poll handles and sessions stay out of logs: the variant's name only.
impl std::fmt::Debug for PollAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PollAnswer::Pending => "Pending",
            PollAnswer::Expired => "Expired",
            PollAnswer::NotFound => "NotFound",
            PollAnswer::Consumed(_) => "Consumed",
            PollAnswer::Determined(_) => "Determined",
            PollAnswer::Fallback => "Fallback",
        })
    }
}

impl std::fmt::Debug for EudiAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EudiAnswer::VerifierSet(_) => "VerifierSet",
            EudiAnswer::Verifier(_) => "Verifier",
            EudiAnswer::Begun { .. } => "Begun",
            EudiAnswer::Tx(_) => "Tx",
            EudiAnswer::Opened(_) => "Opened",
            EudiAnswer::Completed { .. } => "Completed",
            EudiAnswer::Poll(_) => "Poll",
        })
    }
}
