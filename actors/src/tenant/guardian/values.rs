//! What the guardian's pages show (the tenant, the consent page, the portal with its
//! actions) and what a guardian command answers.

use time::OffsetDateTime;

use crate::tenant::records::{ChildStatus, ConsentReceipt};

/// A portal action (spec 2.7 GuardianManagementMutate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortalAction {
    Withdraw,
    Export,
    Delete,
}

impl PortalAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PortalAction::Withdraw => "withdraw",
            PortalAction::Export => "export",
            PortalAction::Delete => "delete",
        }
    }
}

/// The tenant as a guardian's page shows it.
#[derive(Clone, Debug)]
pub struct GuardianTenant {
    pub name: String,
    pub default_locale: String,
}

/// What the consent page shows.
#[derive(Clone, Debug)]
pub struct ConsentView {
    pub tenant: GuardianTenant,
    pub child_email: String,
    pub controller: String,
    pub lawful_basis: String,
    pub purposes: Vec<String>,
    pub data_categories: Vec<String>,
    pub retention: String,
    pub expires_at: OffsetDateTime,
    /// Whether the guardian may prove adulthood with the EU wallet here.
    pub wallet_available: bool,
    /// Whether the guardian did.
    pub adult_proven: bool,
    /// The texts above in other languages, for a page in one of them.
    pub translations: std::collections::BTreeMap<String, crate::tenant::settings::ConsentTexts>,
}

/// What the portal shows (spec 2.7 GuardianPortalContext, without the page's CSRF value).
#[derive(Clone, Debug)]
pub struct PortalView {
    pub tenant: GuardianTenant,
    pub child_email: String,
    pub status: ChildStatus,
    pub registered_at: OffsetDateTime,
    pub last_login_at: Option<OffsetDateTime>,
    pub data_categories: Vec<String>,
    pub receipt: Option<ConsentReceipt>,
    pub controller: String,
    pub actions: Vec<PortalAction>,
    /// After a deletion's first call: the nonce its second call must bring.
    pub confirm_token: Option<String>,
}

/// What a guardian command answers.
pub enum GuardianAnswer {
    Requested {
        expires_at: OffsetDateTime,
    },
    Consent(Box<ConsentView>),
    Answered {
        tenant: GuardianTenant,
        status: ChildStatus,
    },
    /// The wallet age check the guardian started (`EudiAnswer::Begun`).
    WalletBegun(Box<crate::tenant::eudi::EudiAnswer>),
    Portal(Box<PortalView>),
    /// The account was erased.
    Deleted {
        tenant: GuardianTenant,
    },
    Archive(serde_json::Value),
}

/// The archive and the child's address stay out of logs.
impl std::fmt::Debug for GuardianAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GuardianAnswer::Requested { .. } => "GuardianAnswer::Requested",
            GuardianAnswer::Consent(_) => "GuardianAnswer::Consent",
            GuardianAnswer::Answered { .. } => "GuardianAnswer::Answered",
            GuardianAnswer::WalletBegun(_) => "GuardianAnswer::WalletBegun",
            GuardianAnswer::Portal(_) => "GuardianAnswer::Portal",
            GuardianAnswer::Deleted { .. } => "GuardianAnswer::Deleted",
            GuardianAnswer::Archive(_) => "GuardianAnswer::Archive",
        })
    }
}
