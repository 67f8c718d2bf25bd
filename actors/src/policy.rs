//! Registration policy as pure functions: e-mail normalisation, the tenant's e-mail rules
//! (block and allow lists, disposable domains, sub-addresses) and the weak-password check.
//!
//! Nothing here touches storage or the network, so handlers can validate a request before it
//! reaches the tenant actor, and the rules are tested without one.

use std::{collections::HashSet, sync::LazyLock};

use idna::AsciiDenyList;

/// Normalises an e-mail address to the one form it is stored, looked up and compared under:
/// trimmed, the local part lowercased (Unicode `to_lowercase`), the domain lowercased and
/// converted to ASCII (punycode) by UTS 46. `Ä@BÜCHER.de` becomes `ä@xn--bcher-kva.de`.
///
/// `None` when there is not exactly one `@`, either side is empty, the domain has an empty
/// label (`a@b..c`, a leading or trailing dot: `mailinator.com.` must not slip past the
/// lists), or the domain does not convert. The conversion applies the STD3 rules (letters,
/// digits, hyphens), stricter than `idna::domain_to_ascii`, which would let spaces, `_` or
/// `/` through: none of those can name a mail host.
///
/// The syntax of the local part is not checked here; that is the request validator's job.
pub fn normalize_email(raw: &str) -> Option<String> {
    let trimmed = raw.trim();
    let (local, domain) = trimmed.split_once('@')?;
    if local.is_empty() || domain.is_empty() || domain.contains('@') {
        return None;
    }
    let ascii = normalize_domain(domain)?;
    Some(format!("{}@{}", local.to_lowercase(), ascii))
}

/// A domain as addresses and the tenant's domain lists compare it: lowercase ASCII (IDNA
/// punycode, STD3 rules), no empty label. The one rule for both sides, so a list entry and an
/// address's domain can only match when they name the same host.
pub fn normalize_domain(domain: &str) -> Option<String> {
    let ascii = idna::domain_to_ascii_cow(domain.as_bytes(), AsciiDenyList::STD3).ok()?;
    if ascii.is_empty() || ascii.split('.').any(str::is_empty) {
        return None;
    }
    Some(ascii.to_ascii_lowercase())
}

/// The domain of a normalised address (after the last `@`; empty when there is none).
pub fn email_domain(normalized: &str) -> &str {
    normalized.rsplit_once('@').map_or("", |(_, domain)| domain)
}

/// Why a registration e-mail is refused; each reason has its own audit event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmailBlock {
    /// The domain, or a parent domain, is a known disposable-mail provider.
    Disposable,
    /// The local part has a `+` tag.
    Subaddress,
    /// The tenant's own lists: `reason` is `"blocklist"` or `"not_in_allowlist"`.
    CustomBlocklist { reason: &'static str },
}

impl EmailBlock {
    /// The audit event type recorded when a registration is refused for this reason.
    pub fn event_type(&self) -> &'static str {
        match self {
            EmailBlock::Disposable => "auth.register.blocked_disposable",
            EmailBlock::Subaddress => "auth.register.blocked_subaddress",
            EmailBlock::CustomBlocklist { .. } => "auth.register.blocked_custom_blocklist",
        }
    }
}

/// A tenant's e-mail rules for registration, borrowed from its settings.
#[derive(Clone, Copy, Debug)]
pub struct EmailPolicy<'a> {
    pub block_disposable: bool,
    pub block_subaddress: bool,
    /// When non-empty, only these domains may register (lowercase, punycode).
    pub allowlist: &'a [String],
    /// These domains may never register (lowercase, punycode).
    pub blocklist: &'a [String],
}

impl EmailPolicy<'_> {
    /// The first rule `normalized_email` breaks, in this order: the tenant's blocklist (exact
    /// domain), its allowlist (when non-empty), disposable domains (the domain or any parent
    /// domain, when enabled), sub-addresses (when enabled). The tenant's explicit lists come
    /// first so the reason reported is the one the tenant configured.
    pub fn check(&self, normalized_email: &str) -> Option<EmailBlock> {
        let domain = email_domain(normalized_email);
        if self.blocklist.iter().any(|d| d == domain) {
            return Some(EmailBlock::CustomBlocklist {
                reason: "blocklist",
            });
        }
        if !self.allowlist.is_empty() && !self.allowlist.iter().any(|d| d == domain) {
            return Some(EmailBlock::CustomBlocklist {
                reason: "not_in_allowlist",
            });
        }
        if self.block_disposable && is_disposable_domain(domain) {
            return Some(EmailBlock::Disposable);
        }
        if self.block_subaddress {
            let local = normalized_email
                .rsplit_once('@')
                .map_or(normalized_email, |(local, _)| local);
            if local.contains('+') {
                return Some(EmailBlock::Subaddress);
            }
        }
        None
    }
}

/// The disposable-domain list of the `mailchecker` crate, as a set built once. The crate's own
/// `is_valid` is not used: it takes a global lock and scans the list on every call.
static DISPOSABLE_DOMAINS: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| mailchecker::blacklist().into_iter().collect());

/// Whether `domain` or any of its parent domains (never the bare top-level domain) is on the
/// disposable list: `x.mailinator.com` is as disposable as `mailinator.com`.
fn is_disposable_domain(domain: &str) -> bool {
    let mut rest = domain;
    loop {
        if DISPOSABLE_DOMAINS.contains(rest) {
            return true;
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => return false,
        }
    }
}

/// Whether a password is too weak to accept whatever its length:
/// - it is on the common-password list (compared lowercased);
/// - after removing trailing digits and punctuation, the stem of at least 4 characters is on
///   the list (`password1234!`, `Qwertyuiop2024`): appending a year or a `!` adds little;
/// - it is one character repeated (`aaaaaaaaaaaa`), or empty;
/// - it is only digits running up or down, wrapping at 0/9 (`123456789012`, `9876543210`).
///
/// In release builds a call takes well under a microsecond (binary searches). When the
/// `passwords` crate is built with debug assertions it scans its 1 MB list linearly instead:
/// about 12 ms a call; `[profile.dev.package.passwords] debug-assertions = false` avoids it.
pub fn is_weak_password(pw: &str) -> bool {
    let lower = pw.to_lowercase();
    if passwords::analyzer::is_common_password(&lower) {
        return true;
    }
    let stem = lower.trim_end_matches(|c: char| c.is_ascii_digit() || c.is_ascii_punctuation());
    if stem.len() < lower.len()
        && stem.chars().count() >= 4
        && passwords::analyzer::is_common_password(stem)
    {
        return true;
    }
    let mut chars = pw.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    if chars.all(|c| c == first) {
        return true;
    }
    is_digit_run(pw)
}

/// Only ASCII digits, each one more (or each one less) than the previous, modulo 10.
fn is_digit_run(pw: &str) -> bool {
    let bytes = pw.as_bytes();
    if bytes.len() < 2 || !bytes.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let step = |a: u8, b: u8| (10 + b - a) % 10;
    let first = step(bytes[0], bytes[1]);
    (first == 1 || first == 9) && bytes.windows(2).all(|w| step(w[0], w[1]) == first)
}

/// An address as shown back to its owner: the local part's first character, `***`, and the
/// domain (`a***@example.com`).
pub fn mask_email(email: &str) -> String {
    let (local, domain) = email.rsplit_once('@').unwrap_or((email, ""));
    let first: String = local.chars().take(1).collect();
    format!("{first}***@{domain}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_trimmed_lowercased_and_punycoded() {
        assert_eq!(
            normalize_email("  Ä@BÜCHER.de ").as_deref(),
            Some("ä@xn--bcher-kva.de")
        );
        assert_eq!(
            normalize_email("John.Doe+Tag@Example.COM").as_deref(),
            Some("john.doe+tag@example.com")
        );
        // Already-ASCII punycode stays as it is.
        assert_eq!(
            normalize_email("a@xn--bcher-kva.de").as_deref(),
            Some("a@xn--bcher-kva.de")
        );
        // Unicode lowercasing of the local part.
        assert_eq!(
            normalize_email("ÉLOÏSE@x.fr").as_deref(),
            Some("éloïse@x.fr")
        );
        // A host without a dot is still a domain.
        assert_eq!(
            normalize_email("a@localhost").as_deref(),
            Some("a@localhost")
        );
    }

    #[test]
    fn malformed_emails_do_not_normalise() {
        for raw in [
            "",
            "   ",
            "no-at-sign",
            "@example.com",
            "user@",
            "a@b@example.com",
            "a@example..com",
            "a@.example.com",
            "a@example.com.",
            "a@exa mple.com",
            "a@exa_mple.com",
            "a@exa/mple.com",
            "a@[127.0.0.1]",
            "a@xn--a.com",
        ] {
            assert_eq!(normalize_email(raw), None, "{raw:?}");
        }
    }

    #[test]
    fn email_domain_is_after_the_at() {
        assert_eq!(email_domain("a@example.com"), "example.com");
        assert_eq!(email_domain("ä@xn--bcher-kva.de"), "xn--bcher-kva.de");
        assert_eq!(email_domain("nothing"), "");
    }

    fn policy<'a>(allow: &'a [String], block: &'a [String]) -> EmailPolicy<'a> {
        EmailPolicy {
            block_disposable: true,
            block_subaddress: true,
            allowlist: allow,
            blocklist: block,
        }
    }

    fn n(raw: &str) -> String {
        normalize_email(raw).unwrap()
    }

    #[test]
    fn the_blocklist_matches_exact_domains_including_punycode() {
        let block = vec!["evil.test".to_owned(), "xn--bcher-kva.de".to_owned()];
        let p = policy(&[], &block);
        let blocked = Some(EmailBlock::CustomBlocklist {
            reason: "blocklist",
        });
        assert_eq!(p.check(&n("a@evil.test")), blocked);
        assert_eq!(p.check(&n("a@EVIL.test")), blocked);
        assert_eq!(p.check(&n("a@bücher.de")), blocked);
        assert_eq!(p.check(&n("a@BÜCHER.DE")), blocked);
        // Exact match only: sub-domains and look-alikes pass.
        assert_eq!(p.check(&n("a@mail.evil.test")), None);
        assert_eq!(p.check(&n("a@notevil.test")), None);
        assert_eq!(p.check(&n("a@buecher.de")), None);
        assert_eq!(
            blocked.map(|b| b.event_type()),
            Some("auth.register.blocked_custom_blocklist")
        );
    }

    #[test]
    fn a_non_empty_allowlist_admits_only_its_domains() {
        let allow = vec!["corp.test".to_owned(), "xn--mnchen-3ya.de".to_owned()];
        let p = policy(&allow, &[]);
        assert_eq!(p.check(&n("a@corp.test")), None);
        assert_eq!(p.check(&n("a@münchen.de")), None);
        let refused = Some(EmailBlock::CustomBlocklist {
            reason: "not_in_allowlist",
        });
        assert_eq!(p.check(&n("a@gmail.com")), refused);
        assert_eq!(p.check(&n("a@sub.corp.test")), refused);
        // The blocklist wins over the allowlist.
        let block = vec!["corp.test".to_owned()];
        let p = policy(&allow, &block);
        assert_eq!(
            p.check(&n("a@corp.test")),
            Some(EmailBlock::CustomBlocklist {
                reason: "blocklist"
            })
        );
        // An allowlisted disposable domain is still refused as disposable when that is on.
        let allow = vec!["mailinator.com".to_owned()];
        assert_eq!(
            policy(&allow, &[]).check(&n("a@mailinator.com")),
            Some(EmailBlock::Disposable)
        );
    }

    #[test]
    fn disposable_domains_and_their_sub_domains_are_refused_when_enabled() {
        let p = policy(&[], &[]);
        for raw in [
            "a@mailinator.com",
            "a@MAILINATOR.com",
            "a@x.mailinator.com",
            "a@deep.er.mailinator.com",
            "a@yopmail.com",
            "a@10minutemail.com",
        ] {
            assert_eq!(p.check(&n(raw)), Some(EmailBlock::Disposable), "{raw}");
        }
        // Punycode entries of the list match the normalised Unicode domain.
        assert!(DISPOSABLE_DOMAINS.contains("xn--9kq967o.com"));
        assert_eq!(
            p.check(&n("a@xn--9kq967o.com")),
            Some(EmailBlock::Disposable)
        );
        for raw in [
            "a@gmail.com",
            "a@example.com",
            "a@mailinator.com.example",
            "a@com",
        ] {
            assert_eq!(p.check(&n(raw)), None, "{raw}");
        }
        let off = EmailPolicy {
            block_disposable: false,
            ..p
        };
        assert_eq!(off.check(&n("a@mailinator.com")), None);
        assert_eq!(
            EmailBlock::Disposable.event_type(),
            "auth.register.blocked_disposable"
        );
        let count = DISPOSABLE_DOMAINS.len();
        assert!(count > 10_000, "{count}");
        println!("mailchecker disposable domains: {count}");
    }

    #[test]
    fn sub_addresses_are_refused_when_enabled() {
        let p = policy(&[], &[]);
        assert_eq!(
            p.check(&n("a+tag@example.com")),
            Some(EmailBlock::Subaddress)
        );
        assert_eq!(p.check(&n("+@example.com")), Some(EmailBlock::Subaddress));
        assert_eq!(p.check(&n("a.b@example.com")), None);
        let off = EmailPolicy {
            block_subaddress: false,
            ..p
        };
        assert_eq!(off.check(&n("a+tag@example.com")), None);
        // Disposable is reported before sub-address.
        assert_eq!(
            p.check(&n("a+tag@mailinator.com")),
            Some(EmailBlock::Disposable)
        );
        assert_eq!(
            EmailBlock::Subaddress.event_type(),
            "auth.register.blocked_subaddress"
        );
    }

    #[test]
    fn everything_off_and_empty_lists_block_nothing() {
        let p = EmailPolicy {
            block_disposable: false,
            block_subaddress: false,
            allowlist: &[],
            blocklist: &[],
        };
        assert_eq!(p.check(&n("a+b@mailinator.com")), None);
    }

    #[test]
    fn common_passwords_and_their_decorated_forms_are_weak() {
        for pw in [
            "password",
            "PASSWORD",
            "Password",
            "123456",
            "qwerty",
            "iloveyou",
            "password1234!",
            "Password2024!!",
            "Qwertyuiop2024",
            "dragon.99",
            "letmein!",
        ] {
            assert!(is_weak_password(pw), "{pw}");
        }
    }

    #[test]
    fn repeated_characters_and_digit_runs_are_weak() {
        for pw in [
            "",
            "aaaaaaaaaaaaaaaa",
            "ZZZZZZZZZZZZ",
            "ééééééééééé",
            "123456789012",
            "34567890123456",
            "9876543210987",
            "2109876543",
        ] {
            assert!(is_weak_password(pw), "{pw:?}");
        }
    }

    #[test]
    fn strong_or_unlisted_passwords_pass() {
        for pw in [
            "correct horse battery staple",
            "vT7#qL9!mZ2@",
            "1357913579135",
            "1234567890123a",
            "aaaaaaaaaaab",
            // A stem shorter than 4 characters is not looked up.
            "abc!2024!2024",
            // Leading decorations are not stripped.
            "!!!Tr0ub4dor&3xyzzy",
        ] {
            assert!(!is_weak_password(pw), "{pw}");
        }
    }

    #[test]
    fn masked_addresses_keep_one_character_and_the_domain() {
        assert_eq!(mask_email("alice@example.com"), "a***@example.com");
        assert_eq!(mask_email("a@b.eu"), "a***@b.eu");
        assert_eq!(
            mask_email("élodie@xn--bcher-kva.de"),
            "é***@xn--bcher-kva.de"
        );
    }
}
