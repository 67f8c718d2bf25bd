//! Bulk import of users that already have an Argon2id password hash (`tessera admin user
//! import`): a migration from another system, or a benchmark's population.
//!
//! Each call is one batch: every user in it is written, or none. An address that already has
//! an account is skipped (so a failed import can simply be run again), as is a repeat inside
//! the batch. Imported users are not counted as active this month: they have not signed in.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{audit::AuditContext, state::TenantState};
use crate::{error::TenantError, tenant::records::UserRecord};

pub use super::messages::{ImportOutcome, ImportedUser};

/// Most users one import call may carry (the admin server enforces it).
pub const MAX_IMPORT_BATCH: usize = 1000;

impl TenantState {
    /// Writes `users` in one batch with one `admin.users.imported` audit event.
    pub fn import_users(
        &mut self,
        users: Vec<ImportedUser>,
        ctx: &AuditContext,
    ) -> Result<ImportOutcome, TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = self.effects();
        let mut outcome = ImportOutcome::default();
        let mut seen = std::collections::HashSet::new();
        for u in users {
            if !seen.insert(u.email.clone()) || self.user_by_email(&u.email)?.is_some() {
                outcome.skipped_existing += 1;
                continue;
            }
            let mut user = UserRecord::blank(Uuid::now_v7(), now);
            user.email = Some(u.email.clone());
            user.email_verified = u.email_verified;
            user.password_hash = Some(u.password_hash);
            self.put_new_user(&mut fx.batch, &user)?;
            outcome.imported += 1;
        }
        if outcome.imported > 0 {
            self.audit_into(
                &mut fx.batch,
                "admin.users.imported",
                ctx,
                serde_json::json!({
                    "imported": outcome.imported,
                    "skipped_existing": outcome.skipped_existing,
                }),
            )?;
        }
        self.commit(fx)?;
        Ok(outcome)
    }
}
