//! The command surface of wallet sign-in and age verification: `EudiCmd` (what the admin
//! CLI, the client, the wallet's routes and the poll ask) and `eudi_cmd`, which carries one
//! out.

use std::net::IpAddr;

use tessera_storage::ct_eq;
use time::OffsetDateTime;
use zeroize::Zeroizing;

use super::{
    records::{EudiPurpose, EudiVerifierRecord, VERIFIER_KEY},
    refusal::EudiRefusal,
    values::{EudiAnswer, Opening, WalletOutcome},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::eudi::memory::Eudi;
use crate::{error::TenantError, tenant::audit::AuditContext};

#[derive(Clone)]
pub enum EudiCmd {
    /// The admin CLI sets the verifier's key (PKCS#8 DER) and chain (checked by the caller).
    SetVerifier {
        key_pkcs8: Zeroizing<Vec<u8>>,
        chain: Vec<Vec<u8>>,
        not_after: i64,
        development: bool,
    },
    /// The verifier identity, if set.
    Verifier,
    /// Begins a transaction (same-device when `redirect_uri` is given).
    Begin {
        purpose: EudiPurpose,
        redirect_uri: Option<String>,
        ip: IpAddr,
    },
    /// A live, pending transaction for its request object or its QR page.
    Request { request_id: String, ip: IpAddr },
    /// A live, pending transaction and its decryption key, for the wallet's answer.
    Open { request_id: String, ip: IpAddr },
    /// The wallet's error answer (the user declined, or it holds nothing that fits), which
    /// names its transaction by the OpenID4VP `state` alone.
    Declined { state: String, ip: IpAddr },
    /// The checked outcome of the answer: taken once.
    Complete {
        request_id: String,
        outcome: WalletOutcome,
    },
    /// The client's poll.
    Result {
        purpose: EudiPurpose,
        state: String,
        response_code: Option<String>,
    },
}

/// Keys and handles stay out of logs: the command's name only.
impl std::fmt::Debug for EudiCmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EudiCmd::SetVerifier { .. } => "EudiCmd::SetVerifier",
            EudiCmd::Verifier => "EudiCmd::Verifier",
            EudiCmd::Begin { .. } => "EudiCmd::Begin",
            EudiCmd::Request { .. } => "EudiCmd::Request",
            EudiCmd::Open { .. } => "EudiCmd::Open",
            EudiCmd::Declined { .. } => "EudiCmd::Declined",
            EudiCmd::Complete { .. } => "EudiCmd::Complete",
            EudiCmd::Result { .. } => "EudiCmd::Result",
        })
    }
}

impl Eudi {
    pub fn eudi_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: EudiCmd,
        ctx: &AuditContext,
    ) -> Result<EudiAnswer, TenantError> {
        let now = OffsetDateTime::now_utc();
        match cmd {
            EudiCmd::SetVerifier {
                key_pkcs8,
                chain,
                not_after,
                development,
            } => {
                let sealed_key = cx
                    .master_key
                    .seal(&cx.secret_aad(b"eudi-verifier"), &key_pkcs8)?;
                let record = EudiVerifierRecord {
                    sealed_key,
                    chain,
                    not_after,
                    development,
                    set_at: now,
                };
                let mut fx = cx.effects();
                fx.batch.put(VERIFIER_KEY, &record)?;
                cx.audit_into(
                    &mut fx.batch,
                    "eudi.verifier_set",
                    ctx,
                    serde_json::json!({ "development": development, "not_after": not_after }),
                )?;
                cx.commit(fx)?;
                cx.verifier = Eudi::load_verifier(cx)?;
                let v = cx
                    .verifier
                    .clone()
                    .ok_or_else(|| TenantError::Internal("the verifier was not stored".into()))?;
                Ok(EudiAnswer::VerifierSet(v))
            }
            EudiCmd::Verifier => Ok(EudiAnswer::Verifier(cx.verifier.clone())),
            EudiCmd::Begin {
                purpose,
                redirect_uri,
                ip,
            } => self.eudi_begin(cx, purpose, redirect_uri, ip, now, None),
            EudiCmd::Request { request_id, ip } => {
                self.wallet_call(ip)?;
                let (_, tx) = self.live_tx(cx, &request_id, now)?;
                Ok(EudiAnswer::Tx(self.tx_view(cx, &tx)?))
            }
            EudiCmd::Open { request_id, ip } => {
                self.wallet_call(ip)?;
                let (_, tx) = self.live_tx(cx, &request_id, now)?;
                let enc_key = cx
                    .master_key
                    .open(&self.tx_aad(cx, &tx.request_id), &tx.enc_key)?;
                Ok(EudiAnswer::Opened(Box::new(Opening {
                    tx: self.tx_view(cx, &tx)?,
                    enc_key,
                    config: cx.settings.eudi.clone(),
                    age: cx.settings.eudi_age.clone(),
                })))
            }
            EudiCmd::Complete {
                request_id,
                outcome,
            } => self.eudi_complete(cx, &request_id, outcome, ctx, now),
            EudiCmd::Declined { state, ip } => {
                self.wallet_call(ip)?;
                let request_id = state.rsplit_once('.').map_or("", |(r, _)| r).to_owned();
                let (_, tx) = self.live_tx(cx, &request_id, now)?;
                if !ct_eq(tx.oid_state.as_bytes(), state.as_bytes()) {
                    return Err(TenantError::Eudi(EudiRefusal::RequestUnknown));
                }
                match tx.purpose {
                    // The app can ask for the date of birth now instead of waiting.
                    EudiPurpose::Age => {
                        self.eudi_complete(cx, &request_id, WalletOutcome::Age(None), ctx, now)
                    }
                    // A sign-in stays open: the user may try again, with another wallet too.
                    EudiPurpose::Login => Ok(EudiAnswer::Completed { redirect_uri: None }),
                }
            }
            EudiCmd::Result {
                purpose,
                state,
                response_code,
            } => self.eudi_result(cx, purpose, &state, response_code.as_deref(), ctx, now),
        }
    }
}
