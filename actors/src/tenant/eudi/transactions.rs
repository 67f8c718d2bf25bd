//! A transaction's life in the actor: the verifier opened at load, a transaction begun
//! (its encryption key sealed, its poll handle hashed), shown to the wallet, opened for its
//! answer (which changes nothing) and completed exactly once with the checked outcome.

use std::{net::IpAddr, sync::Arc};

use tessera_eudi::jose::{EncryptionKey, SigningKey};
use tessera_storage::{random_token, sha256};
use time::OffsetDateTime;

use super::{
    records::{
        tx_key, AgeTokenRecord, EudiPollIndex, EudiPurpose, EudiTxRecord, EudiVerifierRecord,
        TxOutcome, VerifierIdentity, AGE_THRESHOLD, AGE_TOKEN_TTL, RESULT_TTL, VERIFIER_KEY,
    },
    refusal::EudiRefusal,
    values::{EudiAnswer, TxView, WalletOutcome},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::eudi::memory::Eudi;
use crate::{error::TenantError, tenant::audit::AuditContext, throttle::throttle_ip};

impl Eudi {
    /// Opens the stored verifier identity (at load and after the CLI sets one).
    pub(in crate::tenant) fn load_verifier(
        cx: &TenantCtx,
    ) -> Result<Option<Arc<VerifierIdentity>>, TenantError> {
        let Some(record) = cx.store.get::<EudiVerifierRecord>(VERIFIER_KEY)? else {
            return Ok(None);
        };
        let der = cx
            .master_key
            .open(&cx.secret_aad(b"eudi-verifier"), &record.sealed_key)?;
        let key = SigningKey::from_pkcs8(&der)
            .map_err(|e| TenantError::Internal(format!("the verifier key: {e}")))?;
        let leaf = record
            .chain
            .first()
            .ok_or_else(|| TenantError::Internal("an empty verifier chain".into()))?;
        Ok(Some(Arc::new(VerifierIdentity {
            key,
            client_id: format!("x509_hash:{}", tessera_eudi::x509::x509_hash(leaf)),
            chain: record.chain,
            not_after: record.not_after,
            development: record.development,
        })))
    }

    /// Counts a call of a wallet-facing route from `ip` (they need no key, and each costs a
    /// signature or a key agreement).
    pub(super) fn wallet_call(&mut self, ip: IpAddr) -> Result<(), TenantError> {
        self.wallet_calls
            .hit(&throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })
    }

    pub(super) fn tx_aad(&self, cx: &TenantCtx, request_id: &str) -> Vec<u8> {
        cx.secret_aad(format!("eudi-tx/{request_id}").as_bytes())
    }

    pub(super) fn tx_view(&self, cx: &TenantCtx, tx: &EudiTxRecord) -> Result<TxView, TenantError> {
        let verifier = cx
            .verifier
            .clone()
            .ok_or(TenantError::Eudi(EudiRefusal::VerifierMissing))?;
        let enc = cx
            .master_key
            .open(&self.tx_aad(cx, &tx.request_id), &tx.enc_key)?;
        let enc_jwk = EncryptionKey::from_bytes(&enc)
            .and_then(|k| k.public_jwk(&tx.request_id))
            .map_err(|e| TenantError::Internal(format!("a transaction key: {e}")))?;
        Ok(TxView {
            purpose: tx.purpose,
            request_id: tx.request_id.clone(),
            oid_state: tx.oid_state.clone(),
            nonce: tx.nonce.clone(),
            enc_jwk,
            expires_at: tx.expires_at,
            same_device: tx.redirect_uri.is_some(),
            verifier,
            config: cx.settings.eudi.clone(),
            purpose_text: cx.settings.eudi.purpose.clone(),
            tenant_name: cx.info.name.clone(),
            default_locale: cx.settings.users.default_locale.clone(),
        })
    }

    /// A pending transaction the wallet may still answer.
    pub(super) fn live_tx(
        &self,
        cx: &TenantCtx,
        request_id: &str,
        now: OffsetDateTime,
    ) -> Result<(Vec<u8>, EudiTxRecord), TenantError> {
        let unknown = || TenantError::Eudi(EudiRefusal::RequestUnknown);
        let key =
            tx_key(request_id, &cx.store.tenant_id().0.simple().to_string()).ok_or_else(unknown)?;
        match cx.store.get::<EudiTxRecord>(&key)? {
            Some(tx) if tx.expires_at > now && matches!(tx.outcome, TxOutcome::Pending) => {
                Ok((key, tx))
            }
            Some(tx) if tx.expires_at > now => Err(TenantError::Eudi(EudiRefusal::Replayed)),
            _ => Err(unknown()),
        }
    }

    pub(in crate::tenant) fn eudi_begin(
        &mut self,
        cx: &mut TenantCtx,
        purpose: EudiPurpose,
        redirect_uri: Option<String>,
        ip: IpAddr,
        now: OffsetDateTime,
        guardian_link: Option<[u8; 32]>,
    ) -> Result<EudiAnswer, TenantError> {
        let enabled = match purpose {
            EudiPurpose::Login => cx.settings.eudi.enabled,
            EudiPurpose::Age => cx.settings.eudi_age.age_verification_enabled,
        };
        if !enabled {
            return Err(TenantError::Eudi(EudiRefusal::Disabled));
        }
        match &cx.verifier {
            None => return Err(TenantError::Eudi(EudiRefusal::VerifierMissing)),
            // Wallets refuse a request signed under an expired certificate.
            Some(v) if v.not_after <= now.unix_timestamp() => {
                return Err(TenantError::Eudi(EudiRefusal::VerifierExpired))
            }
            Some(_) => {}
        }
        if let Some(uri) = &redirect_uri {
            if !cx.settings.urls.allows(uri) {
                return Err(TenantError::Eudi(EudiRefusal::RedirectNotAllowed));
            }
        }
        self.begins
            .hit(&throttle_ip(ip), std::time::Instant::now())
            .map_err(|retry_after| TenantError::RateLimited { retry_after })?;
        let random = random_token(24);
        let request_id = format!("{}.{random}", cx.store.tenant_id().0.simple());
        let state = random_token(32);
        let key = EncryptionKey::generate()
            .map_err(|e| TenantError::Internal(format!("a transaction key: {e}")))?;
        let scalar = key
            .to_bytes()
            .map_err(|e| TenantError::Internal(format!("a transaction key: {e}")))?;
        let enc_key = cx.master_key.seal(&self.tx_aad(cx, &request_id), &scalar)?;
        let poll_hash = sha256(state.as_bytes());
        let tx = EudiTxRecord {
            purpose,
            request_id: request_id.clone(),
            poll_hash,
            // The request id leads from an unencrypted error answer (which carries only
            // this) back to its transaction.
            oid_state: format!("{request_id}.{}", random_token(24)),
            nonce: random_token(24),
            enc_key,
            redirect_uri,
            response_code_hash: None,
            created_at: now,
            expires_at: now + cx.runtime.eudi_request_ttl,
            outcome: TxOutcome::Pending,
            guardian_link,
        };
        let mut fx = cx.effects();
        fx.batch.put(random.as_bytes(), &tx)?;
        fx.batch.put(
            &poll_hash,
            &EudiPollIndex {
                tx_key: random.as_bytes().to_vec(),
            },
        )?;
        cx.commit(fx)?;
        Ok(EudiAnswer::Begun {
            tx: self.tx_view(cx, &tx)?,
            state,
        })
    }

    pub(super) fn eudi_complete(
        &mut self,
        cx: &mut TenantCtx,
        request_id: &str,
        outcome: WalletOutcome,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<EudiAnswer, TenantError> {
        let (key, mut tx) = self.live_tx(cx, request_id, now)?;
        let mut fx = cx.effects();
        let kind = match (tx.purpose, outcome) {
            (EudiPurpose::Login, WalletOutcome::Login(identity)) => {
                match self.wallet_user(cx, &mut fx, &identity, ctx, now) {
                    Ok((user, acr)) => {
                        tx.outcome = TxOutcome::SignedIn { user_id: user, acr };
                        "eudi.login.verified"
                    }
                    Err(e) => return cx.fail(fx, e),
                }
            }
            (EudiPurpose::Age, WalletOutcome::Age(Some(over))) => {
                let token = random_token(32);
                let sealed = cx
                    .master_key
                    .seal(&self.tx_aad(cx, &tx.request_id), token.as_bytes())?;
                let token_hash = sha256(token.as_bytes());
                fx.batch.put(
                    &token_hash,
                    &AgeTokenRecord {
                        over,
                        threshold: AGE_THRESHOLD,
                        verified_at: now,
                        expires_at: now + AGE_TOKEN_TTL,
                    },
                )?;
                tx.outcome = TxOutcome::Determined {
                    over,
                    token_hash,
                    sealed_token: Some(sealed),
                };
                if over {
                    if let Some(link) = tx.guardian_link {
                        cx.mark_guardian_adult(&mut fx.batch, &link, now)?;
                    }
                }
                "eudi.age.determined"
            }
            (EudiPurpose::Age, _) => {
                tx.outcome = TxOutcome::Fallback;
                "eudi.age.fallback"
            }
            (EudiPurpose::Login, WalletOutcome::Age(_)) => {
                return Err(TenantError::Internal("an age outcome for a sign-in".into()))
            }
        };
        // Same-device: the browser comes back with a code the poll must show.
        let redirect = match &tx.redirect_uri {
            Some(uri) => {
                let code = random_token(24);
                tx.response_code_hash = Some(sha256(code.as_bytes()));
                let sep = if uri.contains('#') { '&' } else { '#' };
                Some(format!("{uri}{sep}response_code={code}"))
            }
            None => None,
        };
        tx.expires_at = tx.expires_at.max(now + RESULT_TTL);
        fx.batch.put(&key, &tx)?;
        cx.audit_into(
            &mut fx.batch,
            kind,
            ctx,
            match &tx.outcome {
                TxOutcome::SignedIn { user_id, acr } => {
                    serde_json::json!({ "user_id": user_id, "acr": acr.acr() })
                }
                _ => serde_json::json!({}),
            },
        )?;
        cx.commit(fx)?;
        Ok(EudiAnswer::Completed {
            redirect_uri: redirect,
        })
    }
}
