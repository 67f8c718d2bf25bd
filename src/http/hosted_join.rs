//! The hosted page of an organization's mailed invitation, `/join-organization?token=`: which
//! organization invites which address with which role, and the button that joins. Served
//! beside the other mailed links' pages (`hosted.rs`) and built as they are, from the pages'
//! floor (`pages.rs`).
//!
//! - `GET` never uses the link: it looks at the invitation (`OrgCmd::PreviewInvite`) and shows
//!   it. When the address has no account, or one that never confirmed it, the form asks for a
//!   new password twice (joining makes the account, or recovers it); otherwise it is a single
//!   button and the account joins as it is.
//! - `POST` checks the form's CSRF value first (bound to the page and the link's token), looks
//!   at the invitation again (the form does not say whether a password is wanted), checks and
//!   hashes the password when one is, and uses the link (`OrgCmd::AcceptInvite`), as the API's
//!   `POST /v1/auth/organizations/invitations/accept` does.
//!
//! The tenant's name, language and look come from what its sign-in pages show
//! (`oauth::hosted::dress`), so a dead link's page names the tenant too.

use axum::{
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
    Form, Router,
};
use tessera_actors::{
    password::Password,
    tenant::{
        audit::AuditContext,
        organizations::{
            msg::{OrgAnswer, OrgCmd},
            InvitePreview,
        },
    },
    CallError, OrgError, TenantError, TenantHandle,
};

use super::{
    extract::{served_here, RequestCtx},
    mailed_links::tenant_of_link,
    oauth::hosted::dress,
    pages::{
        clean_name, new_password_errors, new_password_fields, FormView, LinkView,
        LinkVisit as Visit, PageTemplate, Problem, Reader,
    },
};
use crate::app::AppState;

/// The page's path: where the invitation mail links to, and what its CSRF value is bound to.
pub const JOIN_PATH: &str = "/join-organization";

/// The invitation page's route.
pub fn router() -> Router<AppState> {
    Router::new().route(JOIN_PATH, get(join_page).post(join_submit))
}

/// The page of an invitation's link: its reader (the tenant's name, language and look set),
/// the tenant the token names, and the token.
struct Invitation {
    reader: Reader,
    tenant: TenantHandle,
    token: String,
}

/// The tenant the link's token names, dressed on the page; or the page that says why not.
async fn open(visit: &Visit) -> Result<Invitation, Response> {
    let mut reader = Reader::new(&visit.state, &visit.headers, visit.q.lang.as_deref());
    let (tenant, token) = visit
        .q
        .token
        .as_deref()
        .and_then(|t| Some((tenant_of_link(&visit.state, t)?, t)))
        .ok_or_else(|| reader.problem(Problem::Invalid))?;
    served_here(&visit.state, tenant.id).map_err(IntoResponse::into_response)?;
    dress(&mut reader, &tenant).await?;
    Ok(Invitation {
        reader,
        tenant,
        token: token.to_owned(),
    })
}

impl Invitation {
    /// Carries out `cmd` on the tenant's actor.
    async fn org(
        &self,
        ctx: &AuditContext,
        cmd: OrgCmd,
    ) -> Result<OrgAnswer, CallError<TenantError>> {
        self.tenant.organizations(ctx, cmd).await
    }

    /// The invitation as it stands (nothing is used); a used, expired or unknown one is the
    /// page that says so.
    async fn preview(&self, ctx: &AuditContext) -> Result<InvitePreview, Response> {
        let cmd = OrgCmd::PreviewInvite {
            token: self.token.clone(),
        };
        match self.org(ctx, cmd).await {
            Ok(OrgAnswer::Preview(p)) => Ok(*p),
            Ok(_) => Err(self.reader.problem(Problem::Internal)),
            Err(e) => Err(self.reader.problem(e.into())),
        }
    }

    /// The text `id` with the invitation's organization, address and role.
    fn t(&self, id: &str, p: &InvitePreview) -> String {
        let organization = clean_name(&p.organization_name);
        self.reader.t_with(
            id,
            &[
                ("organization", &organization),
                ("email", &p.email),
                ("role", &p.role),
            ],
        )
    }

    /// A page titled `title`, a text that may name the invitation.
    fn page(&self, title: &str, p: &InvitePreview) -> PageTemplate {
        let mut page = self.reader.page(title);
        page.title = self.t(title, p);
        page
    }

    /// The page that asks: the invitation, and the new password twice when joining makes or
    /// recovers the account. `errors` are the password fields'; `summary` says why the page
    /// is shown again.
    fn form(
        &self,
        p: &InvitePreview,
        errors: [Option<String>; 2],
        summary: Option<&str>,
    ) -> PageTemplate {
        let mut page = self.page("join-title", p);
        page.error_summary = summary.map(|s| self.reader.t(s));
        page.paragraphs.push(self.t("join-intro", p));
        let csrf = self.reader.csrf(JOIN_PATH, &self.token);
        let form = if p.needs_password {
            page.paragraphs.push(self.t("join-intro-new", p));
            let mut form = FormView::new(csrf, self.reader.t("join-create-button"));
            form.fields = new_password_fields(&self.reader, errors);
            form
        } else {
            page.paragraphs.push(self.t("join-intro-existing", p));
            FormView::new(csrf, self.t("join-button", p))
        };
        page.forms.push(form);
        page
    }

    /// A page of one paragraph that says why joining was refused, with `status`.
    fn refused(&self, status: StatusCode, title: &str, text: &str, p: &InvitePreview) -> Response {
        let mut page = self.page(title, p);
        page.paragraphs.push(self.t(text, p));
        self.reader.answer(status, page, &[])
    }

    /// The page after joining, with a "continue" button to the tenant's site when it has one.
    async fn joined(&self, p: &InvitePreview) -> Response {
        let mut page = self.page("join-done-title", p);
        let text = if p.needs_password {
            "join-done-password"
        } else {
            "join-done"
        };
        page.paragraphs.push(self.t(text, p));
        let site = match self.tenant.edge().await {
            Ok(edge) => edge.urls.site_url.clone(),
            Err(_) => None,
        };
        page.link = site.map(|href| LinkView {
            href,
            label: self.reader.t("continue"),
        });
        self.reader.answer(StatusCode::OK, page, &[])
    }
}

/// The invitation, and the form that accepts it (GET uses nothing).
async fn join_page(visit: Visit, RequestCtx(ctx): RequestCtx) -> Result<Response, Response> {
    let invitation = open(&visit).await?;
    let preview = invitation.preview(&ctx).await?;
    let page = invitation.form(&preview, [None, None], None);
    Ok(invitation.reader.answer(StatusCode::OK, page, &[]))
}

/// Joins: the CSRF value, then the invitation as it stands, then the password when one is
/// wanted (checked before argon2 runs), then the link used.
async fn join_submit(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
    Form(form): Form<super::pages::NewPasswordForm>,
) -> Result<Response, Response> {
    let invitation = open(&visit).await?;
    let reader = &invitation.reader;
    if !reader.csrf_ok(JOIN_PATH, &invitation.token, &form.csrf) {
        return Err(reader.problem(Problem::Csrf));
    }
    let preview = invitation.preview(&ctx).await?;
    let password_hash = if preview.needs_password {
        let errors = new_password_errors(reader, &form.password, &form.password_confirm);
        if errors.iter().any(Option::is_some) {
            let page = invitation.form(&preview, errors, Some("join-error-summary"));
            return Ok(reader.answer(StatusCode::BAD_REQUEST, page, &[]));
        }
        let hash = visit
            .state
            .hasher
            .hash(&Password::new(form.password))
            .await
            .map_err(|_| reader.problem(Problem::Busy))?;
        Some(hash)
    } else {
        None
    };
    let cmd = OrgCmd::AcceptInvite {
        token: invitation.token.clone(),
        password_hash,
    };
    match invitation.org(&ctx, cmd).await {
        Ok(OrgAnswer::Accepted(_)) => Ok(invitation.joined(&preview).await),
        Ok(_) => Err(reader.problem(Problem::Internal)),
        Err(CallError::Failed(TenantError::Organization(
            OrgError::PasswordRequired | OrgError::PasswordNotWanted,
        ))) => {
            // The address's account changed since the look: the page as it is now.
            let now = invitation.preview(&ctx).await?;
            let page = invitation.form(&now, [None, None], Some("join-error-changed"));
            Ok(reader.answer(StatusCode::CONFLICT, page, &[]))
        }
        Err(CallError::Failed(TenantError::UserBlocked)) => Err(invitation.refused(
            StatusCode::FORBIDDEN,
            "join-blocked-title",
            "join-blocked",
            &preview,
        )),
        Err(CallError::Failed(TenantError::Organization(
            OrgError::MemberLimit { .. } | OrgError::MembershipLimit { .. },
        ))) => Err(invitation.refused(
            StatusCode::CONFLICT,
            "join-full-title",
            "join-full",
            &preview,
        )),
        Err(e) => Err(reader.problem(e.into())),
    }
}
