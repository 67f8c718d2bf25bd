//! What a guardian's consent recorded: the tenant actor stores it with the child's record and
//! the guardian portal shows it as it is.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// Spec 2.7 consent_receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = ConsentReceiptBody))]
pub struct ConsentReceipt {
    #[serde(with = "time::serde::rfc3339")]
    pub consented_at: OffsetDateTime,
    pub lawful_basis: String,
    pub purposes: Vec<String>,
    pub data_categories: Vec<String>,
    pub retention: String,
    pub controller: String,
    /// Always true.
    pub withdrawal_available: bool,
    // `email` or `eudi_wallet`.
    #[cfg_attr(feature = "schema", schema(pattern = "^(email|eudi_wallet)$"))]
    pub consent_method: String,
}
