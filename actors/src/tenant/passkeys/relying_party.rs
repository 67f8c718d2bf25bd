//! The relying party, built per call from the settings (the RP id, else the accounts URL's
//! host; its origins), and the change of the RP id, which strands the passkeys registered
//! under the old one only with confirmation.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::passkeys::memory::Passkeys;

use url::Url;
use webauthn_rs_core::WebauthnCore;

use crate::{
    error::TenantError,
    tenant::{assertion, audit::AuditContext, ceremonies::CEREMONY_TTL},
};

use crate::error::PasskeyError;
/// Extra origins a tenant may accept.
pub use crate::tenant::settings::rules::MAX_PASSKEY_ORIGINS;

/// A tenant's relying party: its id and the origins it accepts (`https://<rp id>` with its
/// subdomains, and `passkey_origins` exactly; no other port).
#[derive(Clone)]
pub(super) struct RelyingPartyParts {
    name: String,
    pub(super) rp_id: String,
    origins: Vec<Url>,
}

impl RelyingPartyParts {
    pub(super) fn borrowed(&self) -> assertion::RelyingParty<'_> {
        assertion::RelyingParty {
            rp_id: &self.rp_id,
            origins: &self.origins,
            allow_subdomains: true,
        }
    }

    pub(super) fn core(&self) -> WebauthnCore {
        WebauthnCore::new_unsafe_experts_only(
            &self.name,
            &self.rp_id,
            self.origins.clone(),
            CEREMONY_TTL,
            Some(true),
            Some(false),
        )
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// The relying-party id in force: the setting, else the accounts URL's host.
    pub(in crate::tenant) fn passkey_rp_id(&self) -> String {
        self.rp_id_for(self.settings.passkey_rp_id.as_deref())
    }

    /// The relying-party id a `passkey_rp_id` setting gives.
    fn rp_id_for(&self, setting: Option<&str>) -> String {
        setting.map(str::to_owned).unwrap_or_else(|| {
            Url::parse(&self.runtime.accounts_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| "localhost".to_owned())
        })
    }
}

impl Passkeys {
    /// The relying party as the settings define it now.
    pub(super) fn relying_party_parts(
        &self,
        cx: &TenantCtx,
    ) -> Result<RelyingPartyParts, TenantError> {
        let rp_id = cx.passkey_rp_id();
        let mut origins = vec![Url::parse(&format!("https://{rp_id}"))
            .map_err(|e| TenantError::Internal(format!("relying-party origin: {e}")))?];
        origins.extend(
            cx.settings
                .passkey_origins
                .iter()
                .filter_map(|o| Url::parse(o).ok()),
        );
        Ok(RelyingPartyParts {
            name: cx.info.name.clone(),
            rp_id,
            origins,
        })
    }

    pub(super) fn relying_party(&self, cx: &TenantCtx) -> Result<WebauthnCore, TenantError> {
        Ok(self.relying_party_parts(cx)?.core())
    }

    /// Changes the relying-party id and the extra origins. A new RP id strands the passkeys
    /// registered under the old one: refused while there are any, unless `confirmed`; then
    /// the audit log says how many stopped working.
    pub fn passkey_domain(
        &mut self,
        cx: &mut TenantCtx,
        rp_id: Option<Option<String>>,
        origins: Option<Vec<String>>,
        confirmed: bool,
        ctx: &AuditContext,
    ) -> Result<crate::tenant::messages::SettingsView, TenantError> {
        let old = cx.passkey_rp_id();
        let stranded = match &rp_id {
            Some(next) if cx.rp_id_for(next.as_deref()) != old => self.passkeys_under(cx, &old)?,
            _ => 0,
        };
        if stranded > 0 && !confirmed {
            return Err(TenantError::Passkey(PasskeyError::RpIdInUse {
                passkeys: stranded,
            }));
        }
        let view = cx.update_settings(
            crate::tenant::settings::SettingsChange::PasskeyDomain { rp_id, origins },
            ctx,
        )?;
        if stranded > 0 {
            let mut fx = cx.effects();
            let metadata = serde_json::json!({
                "old_rp_id": old,
                "new_rp_id": cx.passkey_rp_id(),
                "passkeys_stranded": stranded,
            });
            cx.audit_into(&mut fx.batch, "auth.passkey.rp_id_changed", ctx, metadata)?;
            cx.commit(fx)?;
        }
        Ok(view)
    }
}
