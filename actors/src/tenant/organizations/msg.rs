//! The command surface of organizations: `OrgCmd` (what admins and users ask), its
//! answers, and `Organizations::handle`, which carries one out and answers it by its reply
//! policy (reads at once, writes with their mail once durable).

use uuid::Uuid;

use super::{
    Accepted, InvitePreview, InviteView, MemberView, MyOrganization, NewOrganization,
    OrgDomainRecord, OrganizationPatch, OrganizationRecord, Organizations, RoleView,
};
use crate::{
    error::TenantError,
    outbound::MailJob,
    reply::{finish, Outcome, TenantReply},
    tenant::{
        audit::AuditContext,
        ctx::TenantCtx,
        messages::{Bearer, Grant},
    },
};

/// What the tenant's admins and its users ask of organizations.
#[derive(Clone)]
pub enum OrgCmd {
    Create(NewOrganization),
    /// A page, newest first, older than `before`.
    List {
        before: Option<Uuid>,
        limit: usize,
    },
    Get(Uuid),
    Update(Uuid, OrganizationPatch),
    Delete(Uuid),
    /// A page of members by user id, after `after`.
    Members {
        org: Uuid,
        after: Option<Uuid>,
        limit: usize,
    },
    AddMember {
        org: Uuid,
        user: Uuid,
        role: String,
    },
    UpdateMember {
        org: Uuid,
        user: Uuid,
        role: String,
    },
    RemoveMember {
        org: Uuid,
        user: Uuid,
    },
    /// Mails an invitation to a normalised address.
    Invite {
        org: Uuid,
        email: String,
        role: String,
    },
    Invitations(Uuid),
    RevokeInvite {
        org: Uuid,
        email: String,
    },
    /// An organization's domains.
    Domains(Uuid),
    /// Claims a normalised domain.
    AddDomain {
        org: Uuid,
        domain: String,
    },
    /// Proves a claim with the TXT values the edge found at its proof name.
    VerifyDomain {
        org: Uuid,
        domain: String,
        values: Vec<String>,
    },
    UpdateDomain {
        org: Uuid,
        domain: String,
        change: super::domains::DomainChange,
    },
    RemoveDomain {
        org: Uuid,
        domain: String,
    },
    Roles,
    PutRole {
        name: String,
        description: Option<String>,
        permissions: Vec<String>,
    },
    DeleteRole(String),
    /// The caller's organizations.
    Mine(Bearer),
    /// Moves the caller's session into an organization of theirs (`None`: out of any), with
    /// the session's current refresh token, which it rotates.
    Switch {
        bearer: Bearer,
        refresh_token: String,
        org: Option<Uuid>,
    },
    /// A look at a mailed invitation (nothing is used).
    PreviewInvite {
        token: String,
    },
    /// Uses a mailed invitation.
    AcceptInvite {
        token: String,
        password_hash: Option<String>,
    },
}

impl OrgCmd {
    /// Whether the command only reads (its answer need not wait for the disk).
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            OrgCmd::List { .. }
                | OrgCmd::Get(_)
                | OrgCmd::Members { .. }
                | OrgCmd::Invitations(_)
                | OrgCmd::Roles
                | OrgCmd::Domains(_)
                | OrgCmd::Mine(_)
                | OrgCmd::PreviewInvite { .. }
        )
    }
}

/// What a command answers.
#[derive(Debug)]
pub enum OrgAnswer {
    Organization(Box<OrganizationRecord>),
    Organizations(Vec<OrganizationRecord>, Option<Uuid>),
    Member(Box<MemberView>),
    Members(Vec<MemberView>, Option<Uuid>),
    Invite(Box<InviteView>),
    Invites(Vec<InviteView>),
    Domain(Box<OrgDomainRecord>),
    Domains(Vec<OrgDomainRecord>),
    Role(Box<RoleView>),
    Roles(Vec<RoleView>),
    Mine(Vec<MyOrganization>),
    Grant(Box<Grant>),
    Preview(Box<InvitePreview>),
    Accepted(Box<Accepted>),
    Done,
}

type Answered = Result<(OrgAnswer, Vec<MailJob>), TenantError>;

impl Organizations {
    /// Applies one command and answers it by its reply policy.
    pub(in crate::tenant) fn handle(
        &mut self,
        cx: &mut TenantCtx,
        cmd: OrgCmd,
        ctx: AuditContext,
        reply: TenantReply<OrgAnswer>,
    ) {
        let reads_only = cmd.reads_only();
        let out = self.apply(cx, cmd, &ctx);
        finish(cx, reply, Outcome::read_or_mail(reads_only, out));
    }

    fn apply(&mut self, cx: &mut TenantCtx, cmd: OrgCmd, ctx: &AuditContext) -> Answered {
        let read = |a: OrgAnswer| Ok((a, Vec::new()));
        match cmd {
            OrgCmd::Create(new) => {
                let (org, mail) = self.create(cx, new, ctx)?;
                Ok((OrgAnswer::Organization(Box::new(org)), mail))
            }
            OrgCmd::List { before, limit } => {
                let (page, next) = self.list(cx, before, limit)?;
                read(OrgAnswer::Organizations(page, next))
            }
            OrgCmd::Get(id) => read(OrgAnswer::Organization(Box::new(
                self.organization(cx, id)?,
            ))),
            OrgCmd::Update(id, patch) => {
                let (org, mail) = self.update(cx, id, patch, ctx)?;
                Ok((OrgAnswer::Organization(Box::new(org)), mail))
            }
            OrgCmd::Delete(id) => done(self.delete(cx, id, ctx)?),
            OrgCmd::Members { org, after, limit } => {
                let (page, next) = self.members(cx, org, after, limit)?;
                read(OrgAnswer::Members(page, next))
            }
            OrgCmd::AddMember { org, user, role } => {
                let (m, mail) = self.add_member(cx, (org, user, role), ctx)?;
                Ok((OrgAnswer::Member(Box::new(m)), mail))
            }
            OrgCmd::UpdateMember { org, user, role } => {
                let (m, mail) = self.update_member(cx, (org, user, role), ctx)?;
                Ok((OrgAnswer::Member(Box::new(m)), mail))
            }
            OrgCmd::RemoveMember { org, user } => done(self.remove_member(cx, (org, user), ctx)?),
            OrgCmd::Invite { org, email, role } => {
                let (i, mail) = self.invite(cx, (org, email, role), ctx)?;
                Ok((OrgAnswer::Invite(Box::new(i)), mail))
            }
            OrgCmd::Invitations(org) => read(OrgAnswer::Invites(self.invitations(cx, org)?)),
            OrgCmd::RevokeInvite { org, email } => {
                done(self.revoke_invite(cx, (org, email), ctx)?)
            }
            OrgCmd::Domains(org) => read(OrgAnswer::Domains(self.domains(cx, org)?)),
            OrgCmd::AddDomain { org, domain } => {
                let (d, mail) = self.add_domain(cx, (org, domain), ctx)?;
                Ok((OrgAnswer::Domain(Box::new(d)), mail))
            }
            OrgCmd::VerifyDomain {
                org,
                domain,
                values,
            } => {
                let (d, mail) = self.verify_domain(cx, (org, domain, values), ctx)?;
                Ok((OrgAnswer::Domain(Box::new(d)), mail))
            }
            OrgCmd::UpdateDomain {
                org,
                domain,
                change,
            } => {
                let (d, mail) = self.update_domain(cx, (org, domain, change), ctx)?;
                Ok((OrgAnswer::Domain(Box::new(d)), mail))
            }
            OrgCmd::RemoveDomain { org, domain } => {
                done(self.remove_domain(cx, (org, domain), ctx)?)
            }
            OrgCmd::Roles => read(OrgAnswer::Roles(self.roles(cx)?)),
            OrgCmd::PutRole {
                name,
                description,
                permissions,
            } => {
                let (r, mail) = self.put_role(cx, (name, description, permissions), ctx)?;
                Ok((OrgAnswer::Role(Box::new(r)), mail))
            }
            OrgCmd::DeleteRole(name) => done(self.delete_role(cx, name, ctx)?),
            OrgCmd::Mine(bearer) => read(OrgAnswer::Mine(self.mine(cx, bearer)?)),
            OrgCmd::Switch {
                bearer,
                refresh_token,
                org,
            } => {
                let (grant, mail) = self.switch(cx, (bearer, &refresh_token), org, ctx)?;
                Ok((OrgAnswer::Grant(Box::new(grant)), mail))
            }
            OrgCmd::PreviewInvite { token } => {
                read(OrgAnswer::Preview(Box::new(self.preview(cx, &token)?)))
            }
            OrgCmd::AcceptInvite {
                token,
                password_hash,
            } => {
                let (a, mail) = self.accept(cx, &token, password_hash, ctx)?;
                Ok((OrgAnswer::Accepted(Box::new(a)), mail))
            }
        }
    }
}

fn done(((), mail): ((), Vec<MailJob>)) -> Answered {
    Ok((OrgAnswer::Done, mail))
}
