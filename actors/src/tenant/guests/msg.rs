//! Guests: anonymous sign-in, the claim, and the purge: the commands the tenant actor takes for
//! this flow, and how each is answered.

use std::net::IpAddr;

use time::OffsetDateTime;

use crate::tenant::ctx::TenantCtx;
use crate::tenant::guests::memory::Guests;
use crate::{
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        messages::{Bearer, Grant, PurgeReport, Registration, User},
    },
};

pub enum GuestsMsg {
    /// A new guest and its session.
    AnonymousSignin {
        ip: IpAddr,
        public_metadata: serde_json::Value,
        ctx: AuditContext,
        reply: TenantReply<Grant>,
    },
    /// Registration by a signed-in guest: the same user becomes registered.
    Claim {
        bearer: Bearer,
        registration: Registration,
        ctx: AuditContext,
        reply: TenantReply<User>,
    },
    /// Deletes (or counts, dry) the guests inactive beyond the tenant's retention.
    PurgeGuests {
        as_of: OffsetDateTime,
        dry_run: bool,
        reply: TenantReply<PurgeReport>,
    },
}

impl Guests {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(&mut self, cx: &mut TenantCtx, msg: GuestsMsg) {
        match msg {
            GuestsMsg::AnonymousSignin {
                ip,
                public_metadata,
                ctx,
                reply,
            } => {
                let out = self.anonymous_signin(cx, ip, public_metadata, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            GuestsMsg::Claim {
                bearer,
                registration,
                ctx,
                reply,
            } => {
                let out = self.claim(cx, bearer, registration, &ctx);
                finish(cx, reply, Outcome::with_mail(out));
            }
            GuestsMsg::PurgeGuests {
                as_of,
                dry_run,
                reply,
            } => {
                let out = self
                    .purge_guests(cx, as_of, dry_run)
                    .map(|r| (r, Vec::new()));
                finish(cx, reply, Outcome::with_mail(out));
            }
        }
    }
}
