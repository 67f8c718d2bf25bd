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

/// A message ready to be encoded: the subject and the two bodies of a
/// `multipart/alternative` message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// Renders `job` in the template of its kind.
pub fn render(job: &MailJob) -> Rendered {
    let name = clean(&job.tenant_name);
    let html_name = escape_html(&name);
    match &job.kind {
        MailKind::VerifyEmail { link } => {
            let text = format!(
                "Welcome to {name}.\n\n\
                 Confirm your e-mail address by opening this link (it works once, for 24 hours):\n\
                 \n{link}\n\n\
                 If you did not create an account with {name}, ignore this message.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>Welcome to {html_name}.</p>\n\
                     <p>Confirm your e-mail address by opening this link \
                     (it works once, for 24 hours):</p>\n\
                     {}\n\
                     <p>If you did not create an account with {html_name}, \
                     ignore this message.</p>",
                    button(link, "Confirm my e-mail address")
                ),
            );
            Rendered {
                subject: format!("Confirm your e-mail address for {name}"),
                text,
                html,
            }
        }
        MailKind::AccountExists { reset_link } => {
            let text = format!(
                "Someone tried to create an account at {name} with this e-mail address, \
                 but it already has one.\n\n\
                 If it was you, sign in with your password, or choose a new one here \
                 (the link works once, for 1 hour):\n\
                 \n{reset_link}\n\n\
                 If it was not you, ignore this message: nothing has changed.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>Someone tried to create an account at {html_name} with this e-mail \
                     address, but it already has one.</p>\n\
                     <p>If it was you, sign in with your password, or choose a new one \
                     (the link works once, for 1 hour):</p>\n\
                     {}\n\
                     <p>If it was not you, ignore this message: nothing has changed.</p>",
                    button(reset_link, "Reset my password")
                ),
            );
            Rendered {
                subject: format!("You already have an account at {name}"),
                text,
                html,
            }
        }
        MailKind::PasswordReset { link } => {
            let text = format!(
                "We received a request to reset your {name} password.\n\n\
                 Choose a new password by opening this link (it works once, for 1 hour):\n\
                 \n{link}\n\n\
                 If you did not ask, ignore this message; your password is unchanged.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>We received a request to reset your {html_name} password.</p>\n\
                     <p>Choose a new password by opening this link \
                     (it works once, for 1 hour):</p>\n\
                     {}\n\
                     <p>If you did not ask, ignore this message; \
                     your password is unchanged.</p>",
                    button(link, "Choose a new password")
                ),
            );
            Rendered {
                subject: format!("Reset your {name} password"),
                text,
                html,
            }
        }
        MailKind::PasswordChanged => {
            let text = format!(
                "Your {name} password was just changed.\n\n\
                 If it was you, there is nothing to do.\n\n\
                 If it was not you, reset your password at once from the {name} sign-in page, \
                 and contact {name}'s support.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>Your {html_name} password was just changed.</p>\n\
                     <p>If it was you, there is nothing to do.</p>\n\
                     <p><strong>If it was not you</strong>, reset your password at once from \
                     the {html_name} sign-in page, and contact {html_name}'s support.</p>"
                ),
            );
            Rendered {
                subject: format!("Your {name} password was changed"),
                text,
                html,
            }
        }
        MailKind::Invitation { link } => {
            let text = format!(
                "An account at {name} was created for this e-mail address.\n\n\
                 Choose your password by opening this link (it works once, for 7 days):\n\
                 \n{link}\n\n\
                 If you did not expect this, ignore this message: nobody can sign in with \
                 this address until a password is chosen through the link.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>An account at {html_name} was created for this e-mail address.</p>\n\
                     <p>Choose your password by opening this link \
                     (it works once, for 7 days):</p>\n\
                     {}\n\
                     <p>If you did not expect this, ignore this message: nobody can sign in \
                     with this address until a password is chosen through the link.</p>",
                    button(link, "Choose my password")
                ),
            );
            Rendered {
                subject: format!("Your {name} account is ready"),
                text,
                html,
            }
        }
        MailKind::MfaReset => {
            let text = format!(
                "An administrator of {name} removed the authenticator app and the recovery codes \
                 from your account, as you or someone claiming to be you asked.\n\n\
                 Set up two-step verification again from your account.\n\n\
                 If you did not ask for this, reset your password at once from the {name} \
                 sign-in page, and contact {name}'s support.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>An administrator of {html_name} removed the authenticator app and the \
                     recovery codes from your account, as you or someone claiming to be you \
                     asked.</p>\n\
                     <p>Set up two-step verification again from your account.</p>\n\
                     <p><strong>If you did not ask for this</strong>, reset your password at \
                     once from the {html_name} sign-in page, and contact {html_name}'s \
                     support.</p>"
                ),
            );
            Rendered {
                subject: format!("Two-step verification was reset on your {name} account"),
                text,
                html,
            }
        }
        MailKind::PhoneAdded { ending } => {
            let ending = escape_html(ending);
            Rendered {
                subject: format!("A phone number was added to your {name} account"),
                text: format!(
                    "The phone number ending in {ending} was just confirmed on your {name} account: codes \
                     texted to it now sign you in.\n\n\
                     If it was you, there is nothing to do.\n\n\
                     If it was not you, someone has access to your account: reset your password \
                     at once from the {name} sign-in page, and contact {name}'s support.\n"
                ),
                html: page(
                    &html_name,
                    &format!(
                        "<p>The phone number ending in {ending} was just confirmed on your {html_name} \
                         account: codes texted to it now sign you in.</p>\n\
                         <p>If it was you, there is nothing to do.</p>\n\
                         <p><strong>If it was not you</strong>, someone has access to your \
                         account: reset your password at once from the {html_name} sign-in page, \
                         and contact {html_name}'s support.</p>"
                    ),
                ),
            }
        }
        MailKind::PhoneRemoved { ending } => {
            let ending = escape_html(ending);
            Rendered {
                subject: format!("Your phone number left your {name} account"),
                text: format!(
                    "The phone number ending in {ending} was confirmed by another {name} account, so it no \
                     longer signs in to yours. Phone numbers change hands; if this one is still \
                     yours, confirm it again from your account, and contact {name}'s support.\n"
                ),
                html: page(
                    &html_name,
                    &format!(
                        "<p>The phone number ending in {ending} was confirmed by another {html_name} \
                         account, so it no longer signs in to yours.</p>\n\
                         <p>Phone numbers change hands; if this one is still yours, confirm it \
                         again from your account, and contact {html_name}'s support.</p>"
                    ),
                ),
            }
        }
        MailKind::MagicLink { link } => {
            let text = format!(
                "Sign in to {name} by opening this link (it works once, for 10 minutes):\n\
                 \n{link}\n\n\
                 If you did not ask to sign in, ignore this message: nobody can sign in \
                 without the link.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>Sign in to {html_name} by opening this link \
                     (it works once, for 10 minutes):</p>\n{}\n\
                     <p>If you did not ask to sign in, ignore this message: nobody can sign \
                     in without the link.</p>",
                    button(link, "Sign in")
                ),
            );
            Rendered {
                subject: format!("Your sign-in link for {name}"),
                text,
                html,
            }
        }
        MailKind::EmailOtp { code } => {
            let text = format!(
                "Your {name} sign-in code is:\n\n{code}\n\n\
                 It works once, for 10 minutes. Never share it: {name} will not ask you for \
                 it. If you did not ask to sign in, ignore this message.\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>Your {html_name} sign-in code is:</p>\n\
                     <p style=\"font-size:26px;letter-spacing:4px;font-weight:bold\">{code}</p>\n\
                     <p>It works once, for 10 minutes. Never share it: {html_name} will not ask \
                     you for it. If you did not ask to sign in, ignore this message.</p>"
                ),
            );
            Rendered {
                subject: format!("Your {name} sign-in code"),
                text,
                html,
            }
        }
        MailKind::StepUpEmailOtp { code, action_hint } => {
            let (hint, html_hint) = hint_lines(action_hint.as_deref());
            let text = format!(
                "Your {name} security code is:\n\n{code}\n\n\
                 {hint}It works once, for 5 minutes. Never share it: {name} will not ask you \
                 for it.\n\n{STEP_UP_WARNING}\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>Your {html_name} security code is:</p>\n\
                     <p style=\"font-size:26px;letter-spacing:4px;font-weight:bold\">{code}</p>\n\
                     {html_hint}<p>It works once, for 5 minutes. Never share it: {html_name} \
                     will not ask you for it.</p>\n<p><strong>{}</strong></p>",
                    escape_html(STEP_UP_WARNING)
                ),
            );
            Rendered {
                subject: format!("Your {name} security code"),
                text,
                html,
            }
        }
        MailKind::StepUpMagicLink { link, action_hint } => {
            let (hint, html_hint) = hint_lines(action_hint.as_deref());
            let text = format!(
                "Confirm it is you at {name}.\n\n{hint}\
                 Open this link on the device where you asked (it works once, for 10 minutes):\n\
                 \n{link}\n\n{STEP_UP_WARNING}\n"
            );
            let html = page(
                &html_name,
                &format!(
                    "<p>Confirm it is you at {html_name}.</p>\n{html_hint}\
                     <p>Open this link on the device where you asked \
                     (it works once, for 10 minutes):</p>\n{}\n<p><strong>{}</strong></p>",
                    button(link, "Confirm it is me"),
                    escape_html(STEP_UP_WARNING)
                ),
            );
            Rendered {
                subject: format!("Confirm it is you at {name}"),
                text,
                html,
            }
        }
    }
}

/// The warning every step-up message carries (spec section 5, rule 8).
const STEP_UP_WARNING: &str = "If you did not ask for this, do not act on it: do not use \
     the code or the link, and do not pass them on. Someone may be trying to make a sensitive \
     change to your account; change your password if you are worried.";

/// The app's hint of what a step-up confirms, as a text line and an HTML paragraph (empty
/// without a hint). The hint is the app's text: cleaned of control characters, escaped in HTML.
fn hint_lines(hint: Option<&str>) -> (String, String) {
    match hint.map(clean).filter(|h| !h.is_empty()) {
        Some(h) => (
            format!("You asked to confirm: {h}\n\n"),
            format!(
                "<p>You asked to confirm: <strong>{}</strong></p>\n",
                escape_html(&h)
            ),
        ),
        None => (String::new(), String::new()),
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
fn button(link: &str, label: &str) -> String {
    let href = escape_html(link);
    format!(
        "<p><a href=\"{href}\" style=\"display:inline-block;padding:10px 18px;\
         background:#1f4fd1;color:#ffffff;text-decoration:none;border-radius:4px\">{label}</a></p>\n\
         <p style=\"font-size:13px;color:#555555\">Or copy this link into your browser:<br>\
         <a href=\"{href}\" style=\"word-break:break-all\">{href}</a></p>"
    )
}

/// The HTML frame shared by every message.
fn page(html_name: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>{html_name}</title></head>\n\
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
        }
    }

    fn all_kinds(link: &str) -> Vec<MailKind> {
        vec![
            MailKind::VerifyEmail { link: link.into() },
            MailKind::AccountExists {
                reset_link: link.into(),
            },
            MailKind::PasswordReset { link: link.into() },
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
            MailKind::MfaReset,
        ]
    }

    #[test]
    fn every_kind_names_the_tenant_and_carries_its_link_whole() {
        let link = "https://accounts.example.com/acme/verify?token=AbC_dEf-123&x=1";
        for kind in all_kinds(link) {
            let has_link = !matches!(
                kind,
                MailKind::PasswordChanged
                    | MailKind::MfaReset
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
