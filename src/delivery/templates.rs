//! The words of every message a tenant's end users receive, one template per [`MailKind`].
//!
//! Each message has a plain-text part (what many clients show, and what tests and humans read
//! in the outbox) and an HTML part. Both name the tenant, because the user signed up to the
//! tenant's app, not to Tessera. The tenant name is operator-chosen text: it is stripped of
//! control characters everywhere (it lands in a header) and HTML-escaped in the HTML part.
//!
//! Links are kept whole, each on a line of its own in the text part, so that the message
//! encoding (see `mail.rs`) can carry them without wrapping or escaping.

use tessera_actors::outbound::{MailJob, MailKind};

use crate::i18n::MAIL;

/// A message ready to be encoded: the subject and the two bodies of a
/// `multipart/alternative` message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// One part of a message body, in order.
enum Block<'a> {
    /// A paragraph: the catalogue message of this id.
    Para(&'static str),
    /// A paragraph the reader must not miss (bold in HTML).
    Strong(&'static str),
    /// A link: alone on its line in the text part, a button labelled by the message of this
    /// id (and the bare link) in the HTML part.
    Link(&'a str, &'static str),
    /// A one-time code, large in HTML.
    Code(&'a str),
    /// Text the app or agent gave (`$hint`) in the catalogue message of this id, when there
    /// is some.
    Hint(&'static str, Option<&'a str>),
}

/// The catalogue id of a message's subject and its blocks.
fn layout(kind: &MailKind) -> (&'static str, Vec<Block<'_>>) {
    use Block::*;
    match kind {
        MailKind::VerifyEmail { link } => (
            "verify-email-subject",
            vec![
                Para("verify-email-1"),
                Para("verify-email-2"),
                Link(link, "verify-email-button"),
                Para("verify-email-3"),
            ],
        ),
        MailKind::AccountExists { reset_link } => (
            "account-exists-subject",
            vec![
                Para("account-exists-1"),
                Para("account-exists-2"),
                Link(reset_link, "account-exists-button"),
                Para("account-exists-3"),
            ],
        ),
        MailKind::PasswordReset { link } => (
            "password-reset-subject",
            vec![
                Para("password-reset-1"),
                Para("password-reset-2"),
                Link(link, "password-reset-button"),
                Para("password-reset-3"),
            ],
        ),
        MailKind::EmailChange { link } => (
            "email-change-subject",
            vec![
                Para("email-change-1"),
                Link(link, "email-change-button"),
                Para("email-change-2"),
            ],
        ),
        MailKind::EmailChangeAsked { masked } => (
            "email-change-asked-subject",
            vec![
                Hint("email-change-asked-1", Some(masked)),
                Para("email-change-asked-2"),
                Strong("email-change-asked-3"),
            ],
        ),
        MailKind::EmailChangeTaken => (
            "email-change-taken-subject",
            vec![Para("email-change-taken-1"), Para("email-change-taken-2")],
        ),
        MailKind::PasswordChanged => (
            "password-changed-subject",
            vec![
                Para("password-changed-1"),
                Para("password-changed-2"),
                Strong("password-changed-3"),
            ],
        ),
        MailKind::Invitation { link } => (
            "invitation-subject",
            vec![
                Para("invitation-1"),
                Para("invitation-2"),
                Link(link, "invitation-button"),
                Para("invitation-3"),
            ],
        ),
        MailKind::OrganizationInvitation { link, .. } => (
            "org-invitation-subject",
            vec![
                Para("org-invitation-1"),
                Para("org-invitation-2"),
                Link(link, "org-invitation-button"),
                Para("org-invitation-3"),
            ],
        ),
        MailKind::MfaReset => (
            "mfa-reset-subject",
            vec![
                Para("mfa-reset-1"),
                Para("mfa-reset-2"),
                Strong("mfa-reset-3"),
            ],
        ),
        MailKind::PhoneAdded { .. } => (
            "phone-added-subject",
            vec![
                Para("phone-added-1"),
                Para("phone-added-2"),
                Strong("phone-added-3"),
            ],
        ),
        MailKind::PhoneRemoved { .. } => (
            "phone-removed-subject",
            vec![Para("phone-removed-1"), Para("phone-removed-2")],
        ),
        MailKind::MagicLink { link } => (
            "magic-link-subject",
            vec![
                Para("magic-link-1"),
                Link(link, "magic-link-button"),
                Para("magic-link-2"),
            ],
        ),
        MailKind::EmailOtp { code } => (
            "email-otp-subject",
            vec![Para("email-otp-1"), Code(code), Para("email-otp-2")],
        ),
        MailKind::StepUpEmailOtp { code, action_hint } => (
            "step-up-code-subject",
            vec![
                Para("step-up-code-1"),
                Code(code),
                Hint("step-up-hint", action_hint.as_deref()),
                Para("step-up-code-2"),
                Strong("step-up-warning"),
            ],
        ),
        MailKind::StepUpMagicLink { link, action_hint } => (
            "step-up-link-subject",
            vec![
                Para("step-up-link-1"),
                Hint("step-up-hint", action_hint.as_deref()),
                Para("step-up-link-2"),
                Link(link, "step-up-link-button"),
                Strong("step-up-warning"),
            ],
        ),
        MailKind::AgentRequest {
            link,
            binding_message,
            ..
        } => (
            "agent-request-subject",
            vec![
                Para("agent-request-1"),
                Hint("agent-request-binding", binding_message.as_deref()),
                Para("agent-request-2"),
                Link(link, "agent-request-button"),
                Strong("agent-request-3"),
            ],
        ),
        MailKind::AgentRevoked { .. } => (
            "agent-revoked-subject",
            vec![Para("agent-revoked-1"), Strong("agent-revoked-2")],
        ),
        MailKind::WebhookDisabled { .. } => (
            "webhook-disabled-subject",
            vec![Para("webhook-disabled-1"), Para("webhook-disabled-2")],
        ),
        MailKind::GuardianConsent { link, child_email } => (
            "guardian-consent-subject",
            vec![
                Hint("guardian-consent-1", Some(child_email)),
                Para("guardian-consent-2"),
                Link(link, "guardian-consent-button"),
                Strong("guardian-consent-3"),
            ],
        ),
        MailKind::GuardianPortal { link, child_email } => (
            "guardian-portal-subject",
            vec![
                Hint("guardian-portal-1", Some(child_email)),
                Link(link, "guardian-portal-button"),
                Strong("guardian-portal-2"),
            ],
        ),
        MailKind::GuardianExport { link, child_email } => (
            "guardian-export-subject",
            vec![
                Hint("guardian-export-1", Some(child_email)),
                Link(link, "guardian-export-button"),
                Strong("guardian-export-2"),
            ],
        ),
    }
}

/// Renders `job` in the template of its kind, in its language (`crate::i18n::MAIL`).
pub fn render(job: &MailJob) -> Rendered {
    let name = clean(&job.tenant_name);
    let ending = match &job.kind {
        MailKind::PhoneAdded { ending } | MailKind::PhoneRemoved { ending } => clean(ending),
        _ => String::new(),
    };
    let agent = match &job.kind {
        MailKind::AgentRequest { agent_name, .. } | MailKind::AgentRevoked { agent_name, .. } => {
            clean(agent_name)
        }
        _ => String::new(),
    };
    let endpoint = match &job.kind {
        MailKind::WebhookDisabled { url, .. } => clean(url),
        _ => String::new(),
    };
    let organization = match &job.kind {
        MailKind::OrganizationInvitation { organization, .. } => clean(organization),
        _ => String::new(),
    };
    let lang = job.locale.as_str();
    let t = |id: &str, hint: &str| {
        MAIL.text(
            lang,
            id,
            &[
                ("tenant", &name),
                ("ending", &ending),
                ("hint", hint),
                ("agent", &agent),
                ("endpoint", &endpoint),
                ("organization", &organization),
            ],
        )
    };
    let (subject, blocks) = layout(&job.kind);
    let mut text = String::new();
    let mut html = String::new();
    for block in blocks {
        match block {
            Block::Para(id) => {
                let p = t(id, "");
                text.push_str(&format!("{p}\n\n"));
                html.push_str(&format!("<p>{}</p>\n", escape_html(&p)));
            }
            Block::Strong(id) => {
                let p = t(id, "");
                text.push_str(&format!("{p}\n\n"));
                html.push_str(&format!("<p><strong>{}</strong></p>\n", escape_html(&p)));
            }
            Block::Link(link, label) => {
                text.push_str(&format!("{link}\n\n"));
                html.push_str(&button(link, &t(label, ""), &t("link-fallback", "")));
            }
            Block::Code(code) => {
                text.push_str(&format!("{code}\n\n"));
                html.push_str(&format!(
                    "<p style=\"font-size:26px;letter-spacing:4px;font-weight:bold\">{}</p>\n",
                    escape_html(code)
                ));
            }
            Block::Hint(id, hint) => {
                if let Some(h) = hint.map(clean).filter(|h| !h.is_empty()) {
                    let p = t(id, &h);
                    text.push_str(&format!("{p}\n\n"));
                    html.push_str(&format!("<p>{}</p>\n", escape_html(&p)));
                }
            }
        }
    }
    Rendered {
        subject: clean(&t(subject, "")),
        text: format!("{}\n", text.trim_end()),
        html: page(lang, &escape_html(&name), html.trim_end()),
    }
}

/// The tenant name with control characters (line breaks above all: it goes into the Subject
/// header) replaced by spaces and the ends trimmed.
fn clean(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A link as a button, followed by the bare link for clients that hide buttons.
fn button(link: &str, label: &str, fallback: &str) -> String {
    let href = escape_html(link);
    let label = escape_html(label);
    let fallback = escape_html(fallback);
    format!(
        "<p><a href=\"{href}\" style=\"display:inline-block;padding:10px 18px;\
         background:#1f4fd1;color:#ffffff;text-decoration:none;border-radius:4px\">{label}</a></p>\n\
         <p style=\"font-size:13px;color:#555555\">{fallback}<br>\
         <a href=\"{href}\" style=\"word-break:break-all\">{href}</a></p>\n"
    )
}

/// The HTML frame shared by every message.
fn page(lang: &str, html_name: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\">\n<head><meta charset=\"utf-8\"><title>{html_name}</title></head>\n\
         <body style=\"font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;\
         font-size:15px;line-height:1.5;color:#222222\">\n{body}\n</body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use tessera_storage::TenantId;
    use uuid::Uuid;

    use super::*;

    fn job(name: &str, kind: MailKind) -> MailJob {
        MailJob {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            tenant_slug: "acme".into(),
            tenant_name: name.into(),
            to: "user@example.com".into(),
            kind,
            locale: "en".into(),
        }
    }

    fn all_kinds(link: &str) -> Vec<MailKind> {
        vec![
            MailKind::VerifyEmail { link: link.into() },
            MailKind::AccountExists {
                reset_link: link.into(),
            },
            MailKind::PasswordReset { link: link.into() },
            MailKind::EmailChange { link: link.into() },
            MailKind::EmailChangeAsked {
                masked: "n***@example.com".into(),
            },
            MailKind::EmailChangeTaken,
            MailKind::PasswordChanged,
            MailKind::PhoneAdded {
                ending: "78".into(),
            },
            MailKind::PhoneRemoved {
                ending: "78".into(),
            },
            MailKind::StepUpMagicLink {
                link: link.into(),
                action_hint: Some("Link your account".into()),
            },
            MailKind::MagicLink { link: link.into() },
            MailKind::Invitation { link: link.into() },
            MailKind::OrganizationInvitation {
                link: link.into(),
                organization: "Globex\r\nBcc: x".into(),
            },
            MailKind::MfaReset,
            MailKind::AgentRequest {
                link: link.into(),
                agent_name: "Helper".into(),
                binding_message: Some("Order 42".into()),
            },
            MailKind::AgentRevoked {
                agent_name: "Helper".into(),
                client_id: "agt_1".into(),
            },
            MailKind::GuardianConsent {
                link: link.into(),
                child_email: "kid@example.com".into(),
            },
            MailKind::GuardianPortal {
                link: link.into(),
                child_email: "kid@example.com".into(),
            },
            MailKind::GuardianExport {
                link: link.into(),
                child_email: "kid@example.com".into(),
            },
            MailKind::WebhookDisabled {
                url: "https://hooks.example.com/tessera".into(),
                endpoint_id: "0190a6b2-0000-7000-8000-000000000000".into(),
            },
        ]
    }

    #[test]
    fn every_kind_names_the_tenant_and_carries_its_link_whole() {
        let link = "https://accounts.example.com/acme/verify?token=AbC_dEf-123&x=1";
        for kind in all_kinds(link) {
            let has_link = !matches!(
                kind,
                MailKind::PasswordChanged
                    | MailKind::EmailChangeAsked { .. }
                    | MailKind::EmailChangeTaken
                    | MailKind::MfaReset
                    | MailKind::AgentRevoked { .. }
                    | MailKind::WebhookDisabled { .. }
                    | MailKind::PhoneAdded { .. }
                    | MailKind::PhoneRemoved { .. }
            );
            let r = render(&job("Acme Tools", kind.clone()));
            assert!(r.subject.contains("Acme Tools"), "{kind:?}");
            assert!(r.text.contains("Acme Tools"), "{kind:?}");
            assert!(r.html.contains("Acme Tools"), "{kind:?}");
            assert_eq!(
                r.text.lines().any(|l| l == link),
                has_link,
                "{kind:?}: the link is alone on its line in the text part"
            );
            // In HTML the `&` of the query is escaped, as HTML requires.
            assert_eq!(
                r.html.contains("verify?token=AbC_dEf-123&amp;x=1"),
                has_link,
                "{kind:?}"
            );
        }
    }

    #[test]
    fn the_wording_says_what_the_user_must_know() {
        let r = render(&job("Acme", MailKind::VerifyEmail { link: "L".into() }));
        assert!(r.text.contains("24 hours"));
        let r = render(&job("Acme", MailKind::PasswordReset { link: "L".into() }));
        assert!(r.text.contains("1 hour"));
        assert!(r.text.contains("If you did not ask, ignore this message"));
        assert!(r.text.contains("your password is unchanged"));
        let r = render(&job(
            "Acme",
            MailKind::AccountExists {
                reset_link: "L".into(),
            },
        ));
        assert!(r.text.contains("sign in"));
        assert!(r.text.contains("If it was not you, ignore this message"));
        let r = render(&job("Acme", MailKind::PasswordChanged));
        assert!(r.text.contains("was just changed"));
        assert!(r.text.contains("reset your password"));
        assert!(r.text.contains("support"));
    }

    #[test]
    fn the_tenant_name_is_escaped_in_html_and_cannot_break_the_subject() {
        let nasty = "<b>Evil & \"Co\"</b>\r\nBcc: victim@example.com";
        for kind in all_kinds("https://x.test/?token=t") {
            let r = render(&job(nasty, kind));
            assert!(!r.html.contains("<b>Evil"));
            assert!(r
                .html
                .contains("&lt;b&gt;Evil &amp; &quot;Co&quot;&lt;/b&gt;"));
            assert!(!r.subject.contains('\r') && !r.subject.contains('\n'));
        }
    }

    #[test]
    fn step_up_messages_carry_the_code_the_hint_and_the_warning() {
        let r = render(&job(
            "Acme",
            MailKind::StepUpEmailOtp {
                code: "042917".into(),
                action_hint: Some("Delete <all> data\r\nBcc: x".into()),
            },
        ));
        assert!(r.text.lines().any(|l| l == "042917"));
        assert!(
            !r.subject.contains("042917"),
            "the code stays out of previews"
        );
        assert!(r
            .text
            .contains("You asked to confirm: Delete <all> data  Bcc: x"));
        assert!(r.html.contains("Delete &lt;all&gt; data"));
        assert!(r
            .text
            .contains("If you did not ask for this, do not act on it"));
        let r = render(&job(
            "Acme",
            MailKind::StepUpMagicLink {
                link: "https://a.test/step-up/magic-link?token=T".into(),
                action_hint: None,
            },
        ));
        assert!(!r.text.contains("You asked to confirm"));
        assert!(r.text.contains("10 minutes"));
        assert!(r.html.contains("do not act on it"));
    }

    #[test]
    fn escape_covers_the_five_characters() {
        assert_eq!(
            escape_html(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape_html("Café"), "Café");
    }
}
