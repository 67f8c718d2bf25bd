//! The tenant supervisor: one actor per tenant, owner of everything that tenant can change.
//!
//! The actor is a thin `match` over [`TenantMsg`]; the logic lives in the synchronous
//! [`TenantState`]. Handlers never do slow work: no argon2, no network, no fsync (writes are
//! acknowledged through group commit, see `crate::durable`).
//!
//! Invariant: only this actor reads or writes its tenant's keys; its `TenantStore` cannot
//! address any other tenant's.

pub mod accounts;
pub mod agents;
pub mod assertion;
pub mod audit;
pub mod ceremonies;
pub mod challenges;
pub mod credentials;
pub mod devices;
pub mod effects;
pub mod eudi;
pub mod guardian;
pub mod guests;
pub mod hosted;
pub mod import;
pub mod inventory;
pub mod keys;
pub mod limits;
pub mod messages;
pub mod mfa;
pub mod oauth;
pub mod oauth_clients;
pub mod passkeys;
pub mod passwordless;
pub mod records;
pub mod runtime;
pub mod sessions;
pub mod settings;
pub mod sms;
pub mod social;
pub mod state;
pub mod step_up;
pub mod usage;
pub mod users;
pub mod webhooks;

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tessera_storage::{MasterKey, TenantStore};

pub use messages::{SettingsView, TenantInfo, TenantMsg, TenantOverview};
pub use runtime::{PlatformSmsCaps, TenantCells, TenantRuntime, TokenPolicy};
pub use settings::TenantSettings;
pub use state::TenantState;

use crate::{
    durable::reply_when_durable,
    error::TenantError,
    outbound::{MailJob, SmsJob},
};

/// What the directory gives a tenant actor when it starts it.
pub struct TenantArgs {
    pub info: TenantInfo,
    pub store: TenantStore,
    /// Seals and opens the tenant's secrets.
    pub master_key: MasterKey,
    /// Whether `TenantMsg::InjectPanic` may crash this actor (operators' fault drills and tests).
    pub fault_injection: bool,
    pub runtime: TenantRuntime,
    /// Where the actor publishes what request handlers read without a hop.
    pub cells: TenantCells,
}

/// The tenant supervisor actor.
pub struct TenantActor;

impl Actor for TenantActor {
    type Msg = TenantMsg;
    type State = TenantState;
    type Arguments = TenantArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        args: TenantArgs,
    ) -> Result<TenantState, ActorProcessingErr> {
        let state = TenantState::load(
            args.info,
            args.store,
            args.master_key,
            args.fault_injection,
            args.runtime,
            args.cells,
        )?;
        // Whatever was queued when the last run ended goes out now.
        for job in state.queued_mail()? {
            state.runtime.outbound.submit(job);
        }
        if let Some(at) = state.next_webhook_due()? {
            state.runtime.outbound.webhooks_due(state.info().id, at);
        }
        tracing::info!(tenant = %state.info().slug, "tenant actor started");
        Ok(state)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: TenantMsg,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        // Throttle changes that no command's batch took (a reset on a path that writes
        // nothing else) are written before the next message, and when the actor stops.
        state.persist_throttles_logged();
        match message {
            TenantMsg::GetOverview { reply } => {
                let _ = reply.send(Ok(state.overview()));
            }
            TenantMsg::UpdateInfo { info } => state.set_info(info),
            TenantMsg::GetSettings { reply } => {
                let _ = reply.send(Ok(state.settings_view()));
            }
            TenantMsg::UpdateSettings { change, ctx, reply } => {
                match state.update_settings(change, &ctx) {
                    Ok(view) => reply_durable(state, reply, view),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TenantMsg::AppendAudit {
                event_type,
                ctx,
                fields,
                metadata,
                reply,
            } => {
                let mut event = audit::AuditEvent::new(&event_type, &ctx, fields);
                event.metadata = metadata;
                match state.append_audit(event) {
                    Ok(()) => reply_durable(state, reply, ()),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TenantMsg::ListAudit {
                cursor,
                limit,
                event_type,
                reply,
            } => {
                let _ =
                    reply.send(state.list_audit(cursor.as_deref(), limit, event_type.as_deref()));
            }
            TenantMsg::RegisterAdmit { ip, reply } => {
                let _ = reply.send(state.register_admit(ip));
            }
            TenantMsg::Register {
                registration,
                ctx,
                reply,
            } => {
                let out = state.register(registration, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::VerifyEmail { token, ctx, reply } => {
                let out = state.verify_email(&token, &ctx).map(|m| ((), m));
                reply_with_mail(state, reply, out);
            }
            TenantMsg::ResendVerification {
                email,
                redirect_to,
                reply,
            } => {
                let out = state.resend_verification(&email, redirect_to);
                reply_alike(state, reply, out);
            }
            TenantMsg::LoginBegin { attempt, reply } => {
                let _ = reply.send(state.login_begin(&attempt));
            }
            TenantMsg::LoginFinish {
                attempt,
                credential,
                password_ok,
                ctx,
                reply,
            } => {
                let out = state.login_finish(&attempt, &credential, password_ok, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::Refresh { token, ctx, reply } => {
                let out = state.refresh(&token, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::Authenticate { bearer, reply } => {
                let _ = reply.send(state.authenticate(bearer));
            }
            TenantMsg::Logout {
                bearer,
                global,
                ctx,
                reply,
            } => {
                let out = state.logout(bearer, global, &ctx).map(|m| ((), m));
                reply_with_mail(state, reply, out);
            }
            TenantMsg::ListSessions { bearer, reply } => {
                let _ = reply.send(state.list_sessions(bearer));
            }
            TenantMsg::RevokeSession {
                bearer,
                session_id,
                ctx,
                reply,
            } => {
                let out = state
                    .revoke_session(bearer, session_id, &ctx)
                    .map(|m| ((), m));
                reply_with_mail(state, reply, out);
            }
            TenantMsg::ForgotPassword {
                email,
                redirect_to,
                reply,
            } => {
                let out = state.forgot_password(&email, redirect_to);
                reply_alike(state, reply, out);
            }
            TenantMsg::CheckResetLink { token, reply } => {
                let _ = reply.send(state.check_reset_link(&token));
            }
            TenantMsg::ResetPassword {
                token,
                password_hash,
                ctx,
                reply,
            } => {
                let out = state
                    .reset_password(&token, password_hash, &ctx)
                    .map(|m| ((), m));
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasswordCredential { bearer, reply } => {
                let _ = reply.send(state.password_credential(bearer));
            }
            TenantMsg::ChangePassword {
                bearer,
                credential,
                current_ok,
                new_hash,
                ctx,
                reply,
            } => {
                let out = state
                    .change_password(bearer, &credential, current_ok, new_hash, &ctx)
                    .map(|m| ((), m));
                reply_with_mail(state, reply, out);
            }
            TenantMsg::MfaSetup { who, reply } => match state.mfa_setup(&who) {
                Ok(secret) => reply_durable(state, reply, secret),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::MfaVerifySetup {
                who,
                code,
                ctx,
                reply,
            } => {
                let out = state.mfa_verify_setup(&who, &code, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::MfaVerify {
                challenge,
                code,
                bearer,
                ctx,
                reply,
            } => {
                let out = state.mfa_verify(&challenge, &code, bearer, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::MfaDisable {
                bearer,
                credential,
                password_ok,
                code,
                ctx,
                reply,
            } => {
                let out = state.mfa_disable(bearer, &credential, password_ok, &code, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::MfaRegenerateCodes {
                bearer,
                credential,
                password_ok,
                code,
                ctx,
                reply,
            } => {
                let out = state.mfa_regenerate(bearer, &credential, password_ok, &code, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::StepUpPassword {
                bearer,
                credential,
                password_ok,
                latency_ms,
                ctx,
                reply,
            } => {
                let out =
                    state.step_up_password(bearer, &credential, password_ok, latency_ms, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::StepUpMailInitiate {
                bearer,
                link,
                action_hint,
                redirect_to,
                ctx,
                reply,
            } => {
                let out = if link {
                    state.step_up_link_initiate(bearer, action_hint, redirect_to, &ctx)
                } else {
                    state.step_up_email_initiate(bearer, action_hint, &ctx)
                };
                reply_with_mail(state, reply, out);
            }
            TenantMsg::StepUpEmailVerify {
                bearer,
                otp,
                ctx,
                reply,
            } => {
                let out = state.step_up_email_verify(bearer, &otp, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::StepUpLinkVerify {
                bearer,
                token,
                ctx,
                reply,
            } => {
                let out = state.step_up_link_verify(bearer, &token, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasskeyRegisterBegin { bearer, reply } => {
                let _ = reply.send(state.passkey_register_begin(bearer));
            }
            TenantMsg::PasskeyRegisterFinish {
                bearer,
                response,
                nickname,
                ctx,
                reply,
            } => {
                let out = state.passkey_register_finish(bearer, response, nickname, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasskeyAssertBegin {
                user_handle,
                ip,
                reply,
            } => {
                let _ = reply.send(state.passkey_assert_begin(user_handle.as_deref(), ip));
            }
            TenantMsg::PasskeyAssertTake {
                response,
                ip,
                ctx,
                reply,
            } => match state.passkey_assert_take(response, ip, &ctx) {
                // Nothing written: the check goes straight back.
                Ok(check) => {
                    let _ = reply.send(Ok(check));
                }
                Err(e) => reply_with_mail(state, reply, Err(e)),
            },
            TenantMsg::PasskeyAssertFinish {
                passkey,
                verdict,
                ip,
                ctx,
                reply,
            } => {
                let out = state.passkey_assert_finish(passkey, verdict, ip, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasskeyStepUpOptions { bearer, ctx, reply } => {
                let out = state.passkey_step_up_options(bearer, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasskeyStepUpTake {
                bearer,
                assertion,
                ctx,
                reply,
            } => match state.passkey_step_up_take(bearer, assertion, &ctx) {
                Ok(check) => {
                    let _ = reply.send(Ok(check));
                }
                Err(e) => reply_with_mail(state, reply, Err(e)),
            },
            TenantMsg::PasskeyStepUpFinish {
                bearer,
                passkey,
                verdict,
                ctx,
                reply,
            } => {
                let out = state.passkey_step_up_finish(bearer, passkey, verdict, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasskeyList { bearer, reply } => {
                let _ = reply.send(state.passkey_list(bearer));
            }
            TenantMsg::PasskeyRename {
                bearer,
                id,
                nickname,
                ctx,
                reply,
            } => {
                let out = state.passkey_rename(bearer, id, nickname, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasskeyDelete {
                bearer,
                id,
                ctx,
                reply,
            } => {
                let out = state.passkey_delete(bearer, id, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PasskeyDomain {
                rp_id,
                origins,
                confirmed,
                ctx,
                reply,
            } => match state.passkey_domain(rp_id, origins, confirmed, &ctx) {
                Ok(view) => reply_durable(state, reply, view),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::OAuth { cmd, ctx, reply } => match state.oauth_cmd(cmd, &ctx) {
                Ok((answer, true)) => reply_durable(state, reply, answer),
                Ok((answer, false)) => {
                    let _ = reply.send(Ok(answer));
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::OAuthClients { cmd, ctx, reply } => {
                match state.oauth_client_cmd(cmd, &ctx) {
                    Ok(answer) => reply_durable(state, reply, answer),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TenantMsg::Social { cmd, ctx, reply } => match state.social_cmd(cmd, &ctx) {
                Ok(answer) => reply_durable(state, reply, answer),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::Eudi { cmd, ctx, reply } => match state.eudi_cmd(cmd, &ctx) {
                Ok(answer) => reply_durable(state, reply, answer),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::Agents { cmd, ctx, reply } => {
                let reads_only = cmd.reads_only();
                let out = state.agent_cmd(cmd, &ctx);
                if reads_only {
                    let _ = reply.send(out.map(|(answer, _)| answer));
                } else {
                    reply_with_mail(state, reply, out);
                }
            }
            TenantMsg::Guardian {
                cmd,
                ip,
                ctx,
                reply,
            } => {
                let reads_only = cmd.reads_only();
                let out = state.guardian_cmd(cmd, ip, &ctx);
                if reads_only {
                    let _ = reply.send(out.map(|(answer, _)| answer));
                } else {
                    reply_with_mail(state, reply, out);
                }
            }
            TenantMsg::GuardianManagementLink {
                child_email,
                guardian_email,
                ip,
                ctx,
                reply,
            } => {
                let out = state.guardian_management_link(&child_email, &guardian_email, ip, &ctx);
                reply_alike(state, reply, out);
            }
            TenantMsg::Webhooks { cmd, ctx, reply } => {
                let at_once = cmd.answers_at_once();
                let out = state.webhook_cmd(cmd, &ctx);
                if at_once {
                    let _ = reply.send(out.map(|(answer, _)| answer));
                } else {
                    reply_with_mail(state, reply, out);
                }
            }
            TenantMsg::SocialConfig { cmd, ctx, reply } => {
                match state.social_config_cmd(cmd, &ctx) {
                    Ok(view) => reply_durable(state, reply, view),
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TenantMsg::StepUpGate { bearer, reply } => {
                let out = state.step_up_gate(bearer);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::ConsumeStepUp { bearer, jti, reply } => {
                let out = state.consume_step_up(bearer, jti);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::MagicLinkRequest {
                email,
                oauth,
                hosted,
                reply,
            } => {
                let out = state.magic_link_request(&email, oauth, hosted);
                reply_alike(state, reply, out);
            }
            TenantMsg::HostedPeek { link, token, reply } => {
                let _ = reply.send(state.hosted_peek(link, &token));
            }
            TenantMsg::SignInView { reply } => {
                let _ = reply.send(Ok(state.sign_in_view()));
            }
            TenantMsg::HostedMagicLink { token, ctx, reply } => {
                let _ = reply.send(state.hosted_magic_link(&token, &ctx));
            }
            TenantMsg::ExchangeCode {
                code,
                code_verifier,
                ctx,
                reply,
            } => {
                let out = state.exchange_code(&code, &code_verifier, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::MagicLinkVerify {
                token,
                binding_hash,
                ctx,
                reply,
            } => {
                let out = state.magic_link_verify(&token, binding_hash.as_deref(), &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::EmailOtpRequest {
                email,
                create,
                oauth,
                ctx,
                reply,
            } => {
                let out = state.email_otp_request(&email, create, oauth, &ctx);
                reply_alike(state, reply, out);
            }
            TenantMsg::EmailOtpVerify {
                email,
                code,
                binding_hash,
                ip,
                ctx,
                reply,
            } => {
                let out = state.email_otp_verify(&email, &code, binding_hash.as_deref(), ip, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::SmsOtpRequest {
                phone,
                create,
                oauth,
                ip,
                reply,
            } => match state.sms_otp_request(&phone, create, oauth, ip) {
                // Answered at once, after as much work whether or not anything is sent (a
                // decoy is written for a number without a user, see `reply_alike`).
                Ok(job) => {
                    let _ = reply.send(Ok(()));
                    sms_when_durable(state, job);
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::SmsOtpVerify {
                phone,
                code,
                binding_hash,
                ip,
                ctx,
                reply,
            } => {
                let out = state.sms_otp_verify(&phone, &code, binding_hash.as_deref(), ip, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PhoneVerifyRequest {
                bearer,
                phone,
                ip,
                ctx,
                reply,
            } => match state.phone_verify_request(bearer, &phone, ip, &ctx) {
                Ok(job) => {
                    reply_durable(state, reply, ());
                    sms_when_durable(state, Some(job));
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::PhoneConfirm {
                bearer,
                phone,
                code,
                ctx,
                reply,
            } => {
                let out = state.phone_confirm(bearer, &phone, &code, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::SmsTest { phone, ctx, reply } => match state.sms_test(&phone, &ctx) {
                Ok(job) => reply_durable(state, reply, job),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::AnonymousSignin {
                ip,
                public_metadata,
                ctx,
                reply,
            } => {
                let out = state.anonymous_signin(ip, public_metadata, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::Claim {
                bearer,
                registration,
                ctx,
                reply,
            } => {
                let out = state.claim(bearer, registration, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::PurgeGuests {
                as_of,
                dry_run,
                reply,
            } => {
                let out = state.purge_guests(as_of, dry_run).map(|r| (r, Vec::new()));
                reply_with_mail(state, reply, out);
            }
            TenantMsg::AddIdTokenKey { pkcs8, reply } => match state.add_id_token_key(&pkcs8) {
                Ok(Some(token_keys)) => {
                    let ticket = state.store().ticket();
                    let cell = state.keys_cell();
                    tokio::spawn(async move {
                        let out = match ticket.wait().await {
                            Ok(()) => {
                                cell.store(Arc::new(token_keys));
                                Ok(true)
                            }
                            Err(e) => Err(TenantError::Internal(e.to_string())),
                        };
                        let _ = reply.send(out);
                    });
                }
                Ok(None) => {
                    let _ = reply.send(Ok(false));
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::RotateSigningKey { rsa_pkcs8, reply } => {
                match state.rotate_signing_key(rsa_pkcs8.as_deref().map(|v| v.as_slice())) {
                    Ok((rotated, token_keys)) => {
                        let ticket = state.store().ticket();
                        let cell = state.keys_cell();
                        tokio::spawn(async move {
                            let out = match ticket.wait().await {
                                Ok(()) => {
                                    cell.store(Arc::new(token_keys));
                                    Ok(rotated)
                                }
                                Err(e) => Err(TenantError::Internal(e.to_string())),
                            };
                            let _ = reply.send(out);
                        });
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            TenantMsg::MailSettled { id } => {
                if let Err(e) = state.mail_settled(id) {
                    tracing::error!(tenant = %state.info().id, error = %e, "cannot dequeue a settled message");
                }
            }
            TenantMsg::ImportUsers { users, ctx, reply } => match state.import_users(users, &ctx) {
                Ok(outcome) => reply_durable(state, reply, outcome),
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            TenantMsg::ListUsers { query, reply } => {
                let _ = reply.send(state.list_users(&query));
            }
            TenantMsg::GetUser { id, reply } => {
                let _ = reply.send(state.get_user(id));
            }
            TenantMsg::CreateUser { user, ctx, reply } => {
                let out = state.create_user(user, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::UpdateUser {
                id,
                patch,
                ctx,
                reply,
            } => {
                let out = state.update_user(id, patch, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::ActOnUser {
                id,
                action,
                ctx,
                reply,
            } => {
                let out = state.act_on_user(id, action, &ctx);
                reply_with_mail(state, reply, out);
            }
            TenantMsg::DeleteUser { id, ctx, reply } => {
                let out = state.delete_user(id, &ctx);
                reply_erased(state, reply, out);
            }
            TenantMsg::ExportMe { bearer, reply } => {
                let _ = reply.send(state.export_me(bearer));
            }
            TenantMsg::DeleteMe { bearer, ctx, reply } => {
                let out = state.delete_me(bearer, &ctx);
                reply_erased(state, reply, out);
            }
            TenantMsg::UserTraces { needles, reply } => {
                let _ = reply.send(state.user_traces(&needles));
            }
            TenantMsg::UserCredentials { id, reply } => {
                let _ = reply.send(state.user_credentials(id));
            }
            TenantMsg::InjectPanic { reply } => {
                if state.fault_injection() {
                    tracing::warn!(tenant = %state.info().id, "fault injection: panicking");
                    // Deliberate: this drill checks that the directory restarts a crashed tenant.
                    panic!("fault injection for tenant {}", state.info().id);
                }
                let _ = reply.send(Err(TenantError::FaultInjectionDisabled));
            }
            TenantMsg::InjectStall { millis, reply } => {
                if !state.fault_injection() {
                    let _ = reply.send(Err(TenantError::FaultInjectionDisabled));
                    return Ok(());
                }
                tracing::warn!(tenant = %state.info().id, millis, "fault injection: stalling");
                // Deliberate: holds the mailbox so callers see their timeout, not a hang.
                tokio::time::sleep(std::time::Duration::from_millis(millis)).await;
                let _ = reply.send(Ok(()));
            }
        }
        wake_webhooks(state);
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        state.persist_throttles_logged();
        Ok(())
    }
}

/// Wakes the webhook worker when the message just handled scheduled deliveries, once they
/// are on disk (the worker never sends an event whose cause could still be lost).
fn wake_webhooks(state: &TenantState) {
    let Some(at) = state.take_webhook_wake() else {
        return;
    };
    let ticket = state.store().ticket();
    let outbound = state.runtime.outbound.clone();
    let tenant = state.info().id;
    tokio::spawn(async move {
        match ticket.wait().await {
            Ok(()) => outbound.webhooks_due(tenant, at),
            Err(e) => tracing::error!(error = %e, "a write could not be made durable"),
        }
    });
}

/// Replies once the writes applied so far are on disk (errors too: a failed login's counters
/// and a reuse's revocation are writes), then hands the command's mail to delivery. Mail never
/// leaves before the change that caused it is durable.
fn reply_with_mail<T: Send + 'static>(
    state: &TenantState,
    reply: RpcReplyPort<Result<T, TenantError>>,
    out: Result<(T, Vec<MailJob>), TenantError>,
) {
    let ticket = state.store().ticket();
    let outbound = state.runtime.outbound.clone();
    tokio::spawn(async move {
        let out = match ticket.wait().await {
            Ok(()) => out.map(|(value, mail)| {
                for job in mail {
                    outbound.submit(job);
                }
                value
            }),
            Err(e) => {
                tracing::error!(error = %e, "a write could not be made durable");
                Err(TenantError::Internal(e.to_string()))
            }
        };
        let _ = reply.send(out);
    });
}

/// For the answers (`202`) that must not tell whether an address has an account. The command
/// wrote as much for an unknown address as for an account (a link or code and its sealed
/// message, or a decoy of the same size: `TenantState::write_decoy`), so this replies at once
/// and, alike for both, takes a ticket whose flush carries the write; the mail, if any, goes
/// to delivery once it is durable. The answer thus comes after the same work for every address,
/// and the flush (whose time depends on what it writes) is never waited for. Refusals (the
/// switch, the per-address spacing) come before any lookup, alike for every address.
fn reply_alike(
    state: &TenantState,
    reply: RpcReplyPort<Result<(), TenantError>>,
    out: Result<Vec<MailJob>, TenantError>,
) {
    let mail = match out {
        Ok(mail) => mail,
        Err(e) => {
            let _ = reply.send(Err(e));
            return;
        }
    };
    let _ = reply.send(Ok(()));
    let ticket = state.store().ticket();
    let outbound = state.runtime.outbound.clone();
    tokio::spawn(async move {
        match ticket.wait().await {
            Ok(()) => mail.into_iter().for_each(|job| outbound.submit(job)),
            Err(e) => tracing::error!(error = %e, "a write could not be made durable"),
        }
    });
}

/// Hands a text message to delivery once the writes applied so far (its code, the month's
/// count) are on disk. Without a message the flush is asked for all the same (it carries the
/// decoy written in its place).
fn sms_when_durable(state: &TenantState, job: Option<SmsJob>) {
    let ticket = state.store().ticket();
    let outbound = state.runtime.outbound.clone();
    tokio::spawn(async move {
        match ticket.wait().await {
            Ok(()) => {
                if let Some(job) = job {
                    outbound.submit_sms(job);
                }
            }
            Err(e) => tracing::error!(error = %e, "a write could not be made durable"),
        }
    });
}

/// After an erasure: the queued messages it removed are withdrawn from delivery at once (so
/// none is attempted again), and the reply waits for the erasure to be on disk.
fn reply_erased(
    state: &TenantState,
    reply: RpcReplyPort<Result<(), TenantError>>,
    out: Result<Vec<uuid::Uuid>, TenantError>,
) {
    match out {
        Ok(withdrawn) => {
            state.runtime.outbound.withdraw(&withdrawn);
            reply_durable(state, reply, ());
        }
        Err(e) => {
            let _ = reply.send(Err(e));
        }
    }
}

/// Replies `value` once the writes applied so far are on disk.
fn reply_durable<T: Send + 'static>(
    state: &TenantState,
    reply: ractor::RpcReplyPort<Result<T, TenantError>>,
    value: T,
) {
    reply_when_durable(
        state.store().ticket(),
        reply,
        Ok(value),
        TenantError::Internal,
    );
}
