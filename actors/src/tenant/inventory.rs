//! The walk of the credential inventory ([`super::credentials`]): what users hold of each
//! kind as stored, its removal, and the endings that walk every kind. Each of
//! [`TenantCtx::stored`] and [`TenantCtx::clear_held`] is one exhaustive `match` over the
//! kinds; the records of each kind are listed by the flow that owns them.
//!
//! Invariant: every path that ends a holder's hold (erasure, recovery of an unconfirmed
//! address, block) goes through [`TenantCtx::end_holds`], so it reaches every kind.

use std::collections::HashSet;

use tessera_storage::Kind;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    credentials::{Credential, Ending, Fate},
    effects::Effects,
    records::UserRecord,
};
use crate::error::TenantError;
use crate::tenant::ctx::TenantCtx;

/// What users hold of one kind, as stored.
enum Stored {
    /// Records (their kind and key): the credential, its parts and its index entries.
    Records(Vec<(Kind, Vec<u8>)>),
    /// Live agent tokens to denylist: the token record's key, its `jti`, its expiry.
    Tokens(Vec<(Vec<u8>, Uuid, i64)>),
    /// Fields of the user records: how many users have it set.
    Fields(usize),
}

impl Stored {
    fn count(&self) -> usize {
        match self {
            Stored::Records(r) => r.len(),
            Stored::Tokens(t) => t.len(),
            Stored::Fields(n) => *n,
        }
    }
}

/// What an account can do about a durable credential while its address is unconfirmed:
/// `Err` when it may not add one of `kind` (see [`Credential::durable`]). Guests and
/// accounts without an address are not refused by this rule.
pub(super) fn may_add(user: &UserRecord, kind: Credential) -> Result<(), TenantError> {
    if kind.durable() && user.email.is_some() && !user.email_verified {
        return Err(TenantError::EmailUnconfirmed { credential: kind });
    }
    Ok(())
}

impl TenantCtx {
    /// The records of `kind` each of `users` holds, concatenated.
    fn each_user(
        &self,
        users: &[UserRecord],
        list: impl Fn(&Self, &UserRecord) -> Result<Vec<(Kind, Vec<u8>)>, TenantError>,
    ) -> Result<Vec<(Kind, Vec<u8>)>, TenantError> {
        let mut out = Vec::new();
        for user in users {
            out.extend(list(self, user)?);
        }
        Ok(out)
    }

    /// What `users` hold of `kind`.
    fn stored(
        &self,
        users: &[UserRecord],
        kind: Credential,
        now: OffsetDateTime,
    ) -> Result<Stored, TenantError> {
        let ids: HashSet<Uuid> = users.iter().map(|u| u.id).collect();
        let fields =
            |set: fn(&UserRecord) -> bool| Stored::Fields(users.iter().filter(|u| set(u)).count());
        Ok(match kind {
            Credential::Password => fields(|u| u.password_hash.is_some()),
            Credential::Sessions => {
                Stored::Records(self.each_user(users, |s, u| s.session_records(u.id, false))?)
            }
            Credential::OAuthGrants => {
                Stored::Records(self.each_user(users, |s, u| s.session_records(u.id, true))?)
            }
            Credential::OAuthCodes => Stored::Records(self.code_keys(&ids)?),
            Credential::OAuthConsents => {
                Stored::Records(self.each_user(users, |s, u| s.consent_keys(u.id, false))?)
            }
            Credential::Totp => fields(|u| u.totp_seed.is_some() || u.totp_pending.is_some()),
            Credential::RecoveryCodes => fields(|u| !u.recovery_codes.is_empty()),
            Credential::Phone => fields(|u| u.phone.is_some()),
            Credential::Passkeys => {
                Stored::Records(self.each_user(users, |s, u| s.passkey_keys(u.id))?)
            }
            Credential::SocialLinks => {
                Stored::Records(self.each_user(users, |s, u| s.identity_keys(u.id))?)
            }
            Credential::SocialSignIns => Stored::Records(self.social_sign_in_keys(&ids)?),
            Credential::SsoLinks => {
                Stored::Records(self.each_user(users, |s, u| s.sso_link_keys(u.id))?)
            }
            Credential::SsoSignIns => Stored::Records(self.sso_sign_in_keys(&ids)?),
            Credential::WalletLinks => {
                Stored::Records(self.each_user(users, |s, u| s.wallet_link_keys(u.id))?)
            }
            Credential::WalletSignIns => Stored::Records(self.wallet_sign_in_keys(&ids)?),
            Credential::AgentConsents => Stored::Records(self.each_user(users, |s, u| {
                let mut keys = s.consent_keys(u.id, true)?;
                keys.extend(s.user_agent_keys(u.id)?);
                Ok(keys)
            })?),
            Credential::AgentRequests => Stored::Records(self.agent_request_keys(&ids)?),
            Credential::AgentTokens => Stored::Tokens(self.agent_tokens_for(&ids, now)?),
            Credential::Challenges => Stored::Records(self.challenge_keys(&ids)?),
            Credential::MailedLinks => {
                Stored::Records(self.each_user(users, |s, u| s.link_keys(u))?)
            }
            Credential::GuardianLinks => Stored::Records(self.guardian_link_keys(&ids)?),
            Credential::DeviceTokens => {
                Stored::Records(self.each_user(users, |s, u| s.device_keys(u.id))?)
            }
        })
    }

    /// Clears what the user records and the actor's memory keep of `kind` for `users` (the
    /// records of the other kinds are `stored`'s). The caller writes the user records.
    fn clear_held(
        &mut self,
        fx: &mut Effects,
        users: &mut [UserRecord],
        kind: Credential,
    ) -> Result<(), TenantError> {
        for user in users.iter_mut() {
            match kind {
                Credential::Password => {
                    if user.password_hash.take().is_some() {
                        // Reset links and password checks under way carry the old epoch.
                        user.password_epoch = user.password_epoch.wrapping_add(1);
                    }
                }
                Credential::Totp => {
                    user.totp_seed = None;
                    user.totp_pending = None;
                    user.mfa_enabled = false;
                }
                Credential::RecoveryCodes => user.recovery_codes.clear(),
                Credential::Phone => self.drop_phone(&mut fx.batch, user)?,
                Credential::MailedLinks => {
                    user.verify_token = None;
                    user.reset_token = None;
                    user.change_token = None;
                }
                // Passkey registrations and step-ups under way, in memory.
                Credential::Challenges => {
                    self.ceremonies.forget_users(&HashSet::from([user.id]));
                }
                Credential::Sessions
                | Credential::OAuthGrants
                | Credential::OAuthCodes
                | Credential::OAuthConsents
                | Credential::Passkeys
                | Credential::SocialLinks
                | Credential::SocialSignIns
                | Credential::SsoLinks
                | Credential::SsoSignIns
                | Credential::WalletLinks
                | Credential::WalletSignIns
                | Credential::AgentConsents
                | Credential::AgentRequests
                | Credential::AgentTokens
                | Credential::GuardianLinks
                | Credential::DeviceTokens => {}
            }
        }
        Ok(())
    }

    /// Removes what `users` hold of `kind` (into `fx`; the user records' fields in `users`,
    /// which the caller writes); answers how many records, tokens or fields went.
    fn remove_kind(
        &mut self,
        fx: &mut Effects,
        users: &mut [UserRecord],
        kind: Credential,
        now: OffsetDateTime,
    ) -> Result<usize, TenantError> {
        let stored = self.stored(users, kind, now)?;
        let n = stored.count();
        match stored {
            Stored::Records(records) => {
                for (k, key) in records {
                    fx.batch.remove(k, &key);
                }
            }
            Stored::Tokens(tokens) => {
                self.deny_agent_tokens(&mut fx.batch, &tokens)?;
                fx.denied_agent_tokens
                    .extend(tokens.into_iter().map(|(_, jti, _)| jti));
            }
            Stored::Fields(_) => {}
        }
        self.clear_held(fx, users, kind)?;
        Ok(n)
    }

    /// Ends the hold of `users` on their accounts for `ending`: every kind whose fate on that
    /// path is [`Fate::Remove`] goes, into `fx` and the records in `users` (which the caller
    /// writes, or removes for an erasure). Answers the kinds that were held and went.
    pub(super) fn end_holds(
        &mut self,
        fx: &mut Effects,
        users: &mut [UserRecord],
        ending: Ending,
    ) -> Result<Vec<Credential>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut removed = Vec::new();
        for kind in Credential::all() {
            match kind.fate(ending) {
                Fate::Remove => {
                    if self.remove_kind(fx, users, kind, now)? > 0 {
                        removed.push(kind);
                    }
                }
                Fate::Keep(_) => {}
            }
        }
        Ok(removed)
    }

    /// What `user` holds of each kind, as stored: the kinds with something, and how much.
    pub fn holdings(&self, user: &UserRecord) -> Result<Vec<(Credential, usize)>, TenantError> {
        let now = OffsetDateTime::now_utc();
        let users = std::slice::from_ref(user);
        let mut out = Vec::new();
        for kind in Credential::all() {
            let n = self.stored(users, kind, now)?.count();
            if n > 0 {
                out.push((kind, n));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use tessera_storage::sha256;
    use time::Duration;

    use super::*;
    use crate::tenant::state::TenantState;
    use crate::tenant::{
        accounts::tests::tenant,
        agents::{
            index_key, token_key, user_agent_key, AgentRequestRecord, AgentTokenRecord,
            RequestFlow, RequestStatus, UserAgentRecord,
        },
        assertion,
        challenges::{challenge_key, ChallengeRecord, Purpose},
        eudi::{
            Eidas, EudiClaimsRecord, EudiPollIndex, EudiPurpose, EudiSubjectRecord, EudiTxRecord,
            TxOutcome,
        },
        guardian::{GuardianPurpose, GuardianTokenRecord},
        messages::Registration,
        oauth::{consent_key, AuthCodeRecord, ConsentRecord, OAuthGrant},
        records::{passkey_key, LinkPurpose, PasskeyCredentialIndex, PasskeyRecord, PhoneIndex},
        social::{
            identity_key, user_identity_key, Provider, SocialExchangeRecord, SocialIdentityRecord,
            SocialLinkTicketRecord, SocialTokenRecord, UserIdentityIndex,
        },
    };

    fn consent(user: Uuid, client_id: &str, now: OffsetDateTime) -> ConsentRecord {
        ConsentRecord {
            user_id: user,
            client_id: client_id.into(),
            grants: BTreeMap::from([(String::new(), vec!["profile".to_owned()])]),
            granted_at: now,
            updated_at: now,
        }
    }

    /// Gives `user` something of `kind`, stored as the flow that owns it stores it.
    fn give(t: &mut TenantState, user: &mut UserRecord, kind: Credential) {
        let now = OffsetDateTime::now_utc();
        let mut b = t.cx.store.batch();
        let sealed = |t: &TenantState, what: &str| {
            t.cx.master_key
                .seal(&t.cx.user_aad(user.id, what), b"secret")
                .unwrap()
        };
        match kind {
            Credential::Password => user.password_hash = Some("$argon2id$opaque".into()),
            Credential::Sessions | Credential::OAuthGrants => {
                let grant = (kind == Credential::OAuthGrants).then(|| OAuthGrant {
                    client_id: "tc_app".into(),
                    scopes: vec!["openid".into()],
                    resource: None,
                    auth_time: now,
                    sign_in_session: None,
                });
                t.cx.open_session_with(
                    &mut b,
                    user,
                    (1, vec!["pwd".into()]),
                    grant,
                    &crate::tenant::audit::AuditContext::default(),
                    now,
                )
                .unwrap();
            }
            Credential::OAuthCodes => {
                let code = AuthCodeRecord {
                    client_id: "tc_app".into(),
                    redirect_uri: "https://app.example/cb".into(),
                    code_challenge: "c".repeat(43),
                    user_id: user.id,
                    scopes: vec!["openid".into()],
                    resource: None,
                    nonce: None,
                    auth_time: now,
                    aal: 1,
                    amr: vec!["pwd".into()],
                    expires_at: now + Duration::minutes(1),
                    exchanged: None,
                    sign_in_session: None,
                    organization: None,
                };
                b.put(&sha256(b"code"), &code).unwrap();
            }
            Credential::OAuthConsents => {
                b.put(
                    &consent_key(user.id, "tc_app"),
                    &consent(user.id, "tc_app", now),
                )
                .unwrap();
            }
            Credential::Totp => {
                user.totp_seed = Some(sealed(t, "totp_seed"));
                user.mfa_enabled = true;
            }
            Credential::RecoveryCodes => user.recovery_codes = vec!["ab12".into()],
            Credential::Phone => {
                user.phone = Some("+33612345678".into());
                user.phone_verified = true;
                b.put(b"+33612345678", &PhoneIndex { user_id: user.id })
                    .unwrap();
            }
            Credential::Passkeys => {
                let (credential, _) = assertion::tests::registered(
                    tessera_testkit::webauthn::SoftAuthenticator::device_bound(),
                );
                let record = PasskeyRecord {
                    id: Uuid::now_v7(),
                    user_id: user.id,
                    nickname: None,
                    rp_id: "app.example".into(),
                    aaguid: Uuid::nil(),
                    created_at: now,
                    last_used_at: None,
                    suspected_clone: false,
                    credential,
                };
                b.put(
                    &sha256(&record.credential.cred_id),
                    &PasskeyCredentialIndex {
                        user_id: user.id,
                        passkey_id: record.id,
                    },
                )
                .unwrap();
                b.put(&passkey_key(user.id, record.id), &record).unwrap();
            }
            Credential::SocialLinks => {
                let link = identity_key(Provider::Google, "sub-1");
                b.put(
                    &link,
                    &SocialIdentityRecord {
                        user_id: user.id,
                        provider: Provider::Google,
                        subject: "sub-1".into(),
                        email: None,
                        linked_at: now,
                    },
                )
                .unwrap();
                b.put(
                    &link,
                    &SocialTokenRecord {
                        sealed: sealed(t, "social"),
                    },
                )
                .unwrap();
                b.put(
                    &user_identity_key(user.id, Provider::Google),
                    &UserIdentityIndex {
                        subject: "sub-1".into(),
                    },
                )
                .unwrap();
            }
            Credential::SocialSignIns => {
                b.put(
                    Uuid::now_v7().as_bytes(),
                    &SocialExchangeRecord {
                        user_id: user.id,
                        provider: Provider::Google,
                        expires_at: now + Duration::minutes(1),
                    },
                )
                .unwrap();
                b.put(
                    &sha256(b"ticket"),
                    &SocialLinkTicketRecord {
                        user_id: user.id,
                        provider: Provider::Github,
                        redirect_uri: "https://app.example/linked".into(),
                        expires_at: now + Duration::minutes(10),
                    },
                )
                .unwrap();
            }
            Credential::SsoLinks => {
                let connection = Uuid::now_v7();
                b.put(
                    &crate::tenant::sso::records::identity_key(connection, "alice@corp.example"),
                    &crate::tenant::sso::records::SsoIdentityRecord {
                        user_id: user.id,
                        subject: "alice@corp.example".into(),
                        created_at: now,
                        last_used_at: now,
                    },
                )
                .unwrap();
                b.put(
                    &crate::tenant::sso::records::id_pair(user.id, connection),
                    &crate::tenant::sso::records::UserSsoIndex {
                        subject_hash: sha256(b"alice@corp.example"),
                    },
                )
                .unwrap();
            }
            Credential::SsoSignIns => {
                b.put(
                    &sha256(b"sso_code"),
                    &crate::tenant::sso::records::SsoExchangeRecord {
                        user_id: user.id,
                        connection: Uuid::now_v7(),
                        organization: Uuid::now_v7(),
                        expires_at: now + Duration::minutes(1),
                    },
                )
                .unwrap();
            }
            Credential::WalletLinks => {
                let subject = sha256(b"issuer|pid-1");
                b.put(
                    &subject,
                    &EudiSubjectRecord {
                        user_id: user.id,
                        issuer: "https://issuer.example".into(),
                        linked_at: now,
                    },
                )
                .unwrap();
                b.put(
                    user.id.as_bytes(),
                    &EudiClaimsRecord {
                        sealed: sealed(t, "eudi_claims"),
                        subjects: vec![subject],
                        acr: Eidas::High,
                        issuer: "https://issuer.example".into(),
                        verified_at: now,
                    },
                )
                .unwrap();
            }
            Credential::WalletSignIns => {
                let poll_hash = sha256(b"poll");
                b.put(
                    b"tx-1",
                    &EudiTxRecord {
                        purpose: EudiPurpose::Login,
                        request_id: "req-1".into(),
                        poll_hash,
                        oid_state: "s".into(),
                        nonce: "n".into(),
                        enc_key: sealed(t, "enc"),
                        redirect_uri: None,
                        response_code_hash: None,
                        created_at: now,
                        expires_at: now + Duration::minutes(5),
                        outcome: TxOutcome::SignedIn {
                            user_id: user.id,
                            acr: Eidas::High,
                        },
                        guardian_link: None,
                    },
                )
                .unwrap();
                b.put(
                    &poll_hash,
                    &EudiPollIndex {
                        tx_key: b"tx-1".to_vec(),
                    },
                )
                .unwrap();
            }
            Credential::AgentConsents => {
                let agent = Uuid::now_v7();
                b.put(
                    &consent_key(user.id, "agt_1"),
                    &consent(user.id, "agt_1", now),
                )
                .unwrap();
                b.put(
                    &user_agent_key(user.id, agent),
                    &UserAgentRecord {
                        agent_id: agent,
                        client_id: "agt_1".into(),
                        action_count: 1,
                        last_action_at: Some(now),
                        revoked_at: None,
                    },
                )
                .unwrap();
            }
            Credential::AgentRequests => {
                let request = AgentRequestRecord {
                    id: Uuid::now_v7(),
                    flow: RequestFlow::Ciba,
                    agent_id: Uuid::now_v7(),
                    client_id: "agt_1".into(),
                    user: Some(user.id),
                    scopes: vec!["openid".into()],
                    resource: None,
                    binding_message: None,
                    user_code: None,
                    link_hash: None,
                    created_at: now,
                    expires_at: now + Duration::minutes(5),
                    interval_secs: 5,
                    last_poll_at: now,
                    status: RequestStatus::Approved,
                };
                let key = sha256(b"auth_req_id");
                b.put(
                    &index_key(b'i', request.id.as_bytes()),
                    &crate::tenant::agents::AgentRequestIndex { key },
                )
                .unwrap();
                b.put(&key, &request).unwrap();
            }
            Credential::AgentTokens => {
                b.put(
                    &token_key(Uuid::now_v7(), Uuid::now_v7()),
                    &AgentTokenRecord {
                        exp: (now + Duration::minutes(5)).unix_timestamp(),
                        user: Some(user.id),
                    },
                )
                .unwrap();
            }
            Credential::Challenges => {
                let c = ChallengeRecord::new(
                    Purpose::StepUpToken,
                    user,
                    None,
                    Duration::minutes(5),
                    now,
                );
                b.put(&challenge_key(user.id, Purpose::StepUpToken), &c)
                    .unwrap();
            }
            Credential::MailedLinks => {
                t.cx.issue_link(&mut b, user, (LinkPurpose::ResetPassword, None), now)
                    .unwrap();
            }
            Credential::GuardianLinks => {
                b.put(
                    &sha256(b"portal"),
                    &GuardianTokenRecord {
                        purpose: GuardianPurpose::Portal,
                        child: user.id,
                        guardian: "parent@example.com".into(),
                        expires_at: now + Duration::hours(1),
                        confirm: None,
                        archive: None,
                        adult_proven: false,
                        exports: 0,
                    },
                )
                .unwrap();
            }
            Credential::DeviceTokens => {
                t.cx.issue_device(&mut b, user.id, now).unwrap();
            }
        }
        b.put(user.id.as_bytes(), &*user).unwrap();
        t.cx.store.apply(b).unwrap();
    }

    /// A user of `t` holding something of every kind.
    fn holder_of_everything(t: &mut TenantState) -> UserRecord {
        t.accounts
            .register(
                &mut t.cx,
                Registration {
                    email: "holder@example.com".into(),
                    password_hash: "$argon2id$opaque".into(),
                    date_of_birth: None,
                    age_verification_token: None,
                    redirect_to: None,
                    locale: None,
                },
                &Default::default(),
            )
            .unwrap();
        let mut user = t.cx.user_by_email("holder@example.com").unwrap().unwrap();
        for kind in Credential::all() {
            give(t, &mut user, kind);
        }
        user
    }

    fn kinds(held: &[(Credential, usize)]) -> Vec<Credential> {
        held.iter().map(|(k, _)| *k).collect()
    }

    #[test]
    fn each_ending_leaves_exactly_what_its_fates_keep() {
        for ending in [Ending::Erasure, Ending::Recovery, Ending::Block] {
            let dir = tempfile::tempdir().unwrap();
            let mut t = tenant(dir.path());
            let mut user = holder_of_everything(&mut t);
            // The fixture gives every kind, and the inventory sees each.
            let all: Vec<Credential> = Credential::all().collect();
            assert_eq!(kinds(&t.cx.holdings(&user).unwrap()), all, "{ending:?}");

            let mut fx = t.cx.effects();
            let removed =
                t.cx.end_holds(&mut fx, std::slice::from_mut(&mut user), ending)
                    .unwrap();
            fx.batch.put(user.id.as_bytes(), &user).unwrap();
            t.cx.commit(fx).unwrap();

            let kept: Vec<Credential> = Credential::all()
                .filter(|k| k.fate(ending) != Fate::Remove)
                .collect();
            let gone: Vec<Credential> = Credential::all()
                .filter(|k| k.fate(ending) == Fate::Remove)
                .collect();
            assert_eq!(removed, gone, "{ending:?}");
            let user = t.cx.user(user.id).unwrap().unwrap();
            assert_eq!(kinds(&t.cx.holdings(&user).unwrap()), kept, "{ending:?}");
        }
    }

    #[test]
    fn denylisted_agent_tokens_reach_the_edge_with_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let mut user = holder_of_everything(&mut t);
        let jti =
            t.cx.agent_tokens_for(&HashSet::from([user.id]), OffsetDateTime::now_utc())
                .unwrap()[0]
                .1;
        let mut fx = t.cx.effects();
        t.cx.end_holds(&mut fx, std::slice::from_mut(&mut user), Ending::Block)
            .unwrap();
        assert!(
            !t.cx.cells.agents.load().is_denied(&jti.to_string()),
            "published before the commit"
        );
        t.cx.commit(fx).unwrap();
        assert!(t.cx.cells.agents.load().is_denied(&jti.to_string()));
    }

    #[test]
    fn an_unconfirmed_address_adds_no_durable_credential() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = tenant(dir.path());
        let user = holder_of_everything(&mut t);
        assert!(user.email.is_some() && !user.email_verified);
        for kind in Credential::all() {
            let refused = matches!(
                may_add(&user, kind),
                Err(TenantError::EmailUnconfirmed { credential }) if credential == kind
            );
            assert_eq!(refused, kind.durable(), "{kind}");
        }
        let confirmed = UserRecord {
            email_verified: true,
            ..user.clone()
        };
        let guest = UserRecord {
            email: None,
            ..user
        };
        for kind in Credential::all() {
            assert!(may_add(&confirmed, kind).is_ok(), "{kind}");
            assert!(may_add(&guest, kind).is_ok(), "{kind}");
        }
    }
}
