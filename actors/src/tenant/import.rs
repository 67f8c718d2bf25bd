//! Bulk import of users that already have an Argon2id password hash (`tessera admin user
//! import`): a migration from another system, or a benchmark's population.
//!
//! Each call is one batch: every user in it is written, or none. An address that already has
//! an account is skipped (so a failed import can simply be run again), as is a repeat inside
//! the batch. Imported users are not counted as active this month: they have not signed in.

use time::OffsetDateTime;
use uuid::Uuid;

use super::audit::AuditContext;
use crate::{error::TenantError, tenant::records::UserRecord};

pub use super::messages::{ImportOutcome, ImportedUser};
use crate::tenant::ctx::TenantCtx;

/// Most users one import call may carry (the admin server enforces it).
pub const MAX_IMPORT_BATCH: usize = 1000;

impl TenantCtx {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tenant::state::TenantState;
    use crate::tenant::{accounts::tests::tenant, audit::AuditEvent};

    fn imported(email: &str) -> ImportedUser {
        ImportedUser {
            email: email.into(),
            password_hash: format!("$argon2id$v=19$m=19456,t=2,p=1${email}"),
            email_verified: true,
        }
    }

    fn events_of(t: &TenantState, kind: &str) -> Vec<AuditEvent> {
        t.cx.list_audit(None, 100, Some(kind))
            .unwrap()
            .events
            .into_iter()
            .map(|(_, e)| e)
            .collect()
    }

    #[tokio::test]
    async fn an_import_skips_existing_addresses_and_repeats_and_can_run_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let ctx = AuditContext::default();
        let mut first = imported("ada@example.com");
        first.email_verified = false;
        let batch = vec![
            first,
            imported("bob@example.com"),
            imported("ada@example.com"),
        ];
        let outcome = t.cx.import_users(batch.clone(), &ctx).unwrap();
        assert_eq!(
            outcome,
            ImportOutcome {
                imported: 2,
                skipped_existing: 1
            }
        );
        let ada = t.cx.user_by_email("ada@example.com").unwrap().unwrap();
        // The first occurrence wins; the hash is kept as given.
        assert!(!ada.email_verified);
        assert_eq!(
            ada.password_hash.as_deref(),
            Some("$argon2id$v=19$m=19456,t=2,p=1$ada@example.com")
        );
        assert_eq!(events_of(&t, "admin.users.imported").len(), 1);
        // Run again: nothing new, no event.
        let again = t.cx.import_users(batch, &ctx).unwrap();
        assert_eq!(
            again,
            ImportOutcome {
                imported: 0,
                skipped_existing: 3
            }
        );
        assert_eq!(events_of(&t, "admin.users.imported").len(), 1);
    }

    #[tokio::test]
    async fn imported_users_are_listed_but_not_counted_active() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let now = OffsetDateTime::now_utc();
        let before = t.cx.mau.in_month(now);
        t.cx.import_users(
            vec![imported("a@example.com"), imported("b@example.com")],
            &AuditContext::default(),
        )
        .unwrap();
        assert_eq!(t.cx.mau.in_month(now), before);
        let q = crate::tenant::messages::UserQuery {
            limit: 10,
            ..Default::default()
        };
        assert_eq!(t.users.list_users(&t.cx, &q).unwrap().users.len(), 2);
    }
}
