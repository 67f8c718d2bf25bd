//! The words end users read, in the five languages Tessera speaks (`en`, `pl`, `de`, `fr`,
//! `es`): one Fluent catalogue per language and audience (`locales/{lang}/pages.ftl` for the
//! hosted pages, `locales/{lang}/mail.ftl` for mail), compiled into the binary.
//!
//! A message missing from a language falls back to English, so a gap shows English words, never
//! an id; a unit test keeps every catalogue complete. Placeables are not wrapped in Unicode
//! isolation marks: the values are names and numbers, and the marks would end up in mail
//! subjects and in the text part.

use std::sync::LazyLock;

use fluent_bundle::{concurrent::FluentBundle, FluentArgs, FluentResource};
use fluent_langneg::{negotiate_languages, NegotiationStrategy};
use unic_langid::LanguageIdentifier;

/// The languages, English first (the fallback).
pub const LOCALES: [&str; 5] = ["en", "pl", "de", "fr", "es"];

/// The language of `tag` when it is one of [`LOCALES`] (`de-AT` is `de`), else `None`.
pub fn supported(tag: &str) -> Option<&'static str> {
    let primary = tag.split(['-', '_']).next()?.to_ascii_lowercase();
    LOCALES.iter().copied().find(|l| *l == primary)
}

/// The language for a reader: the first of `choices` that is one of [`LOCALES`] (an explicit
/// choice, a stored preference), else the best match of an `Accept-Language` header, else
/// `fallback`.
pub fn negotiate(
    choices: &[Option<&str>],
    accept_language: Option<&str>,
    fallback: &'static str,
) -> &'static str {
    if let Some(l) = choices.iter().flatten().find_map(|c| supported(c)) {
        return l;
    }
    let Some(header) = accept_language else {
        return fallback;
    };
    let requested = fluent_langneg::accepted_languages::parse(header);
    let available: Vec<fluent_langneg::LanguageIdentifier> =
        LOCALES.iter().filter_map(|l| l.parse().ok()).collect();
    let chosen = negotiate_languages(&requested, &available, None, NegotiationStrategy::Filtering);
    chosen
        .first()
        .and_then(|l| supported(&l.to_string()))
        .unwrap_or(fallback)
}

/// One audience's messages in every language.
pub struct Catalogue {
    bundles: Vec<(&'static str, FluentBundle<FluentResource>)>,
}

impl Catalogue {
    fn new(sources: [(&'static str, &'static str); 5]) -> Self {
        let bundles = sources
            .into_iter()
            .filter_map(|(lang, source)| {
                let id: LanguageIdentifier = lang.parse().ok()?;
                let mut bundle = FluentBundle::new_concurrent(vec![id]);
                bundle.set_use_isolating(false);
                // A syntax error drops the broken entries only; the completeness test
                // catches them.
                let resource =
                    FluentResource::try_new(source.to_owned()).unwrap_or_else(|(r, _)| r);
                bundle.add_resource_overriding(resource);
                Some((lang, bundle))
            })
            .collect();
        Catalogue { bundles }
    }

    fn bundle(&self, lang: &str) -> Option<&FluentBundle<FluentResource>> {
        self.bundles
            .iter()
            .find(|(l, _)| *l == lang)
            .map(|(_, b)| b)
    }

    /// The message `id` in `lang` (English when that language lacks it) with `args`; the id
    /// itself when no language has it.
    pub fn text(&self, lang: &str, id: &str, args: &[(&str, &str)]) -> String {
        let mut fargs = FluentArgs::new();
        for (k, v) in args {
            fargs.set(*k, *v);
        }
        for b in [self.bundle(lang), self.bundle("en")].into_iter().flatten() {
            if let Some(pattern) = b.get_message(id).and_then(|m| m.value()) {
                let mut errors = Vec::new();
                return b
                    .format_pattern(pattern, Some(&fargs), &mut errors)
                    .into_owned();
            }
        }
        id.to_owned()
    }

    /// Whether `lang` has message `id` itself.
    pub fn has(&self, lang: &str, id: &str) -> bool {
        self.bundle(lang).is_some_and(|b| b.has_message(id))
    }
}

/// The hosted pages' messages.
pub static PAGES: LazyLock<Catalogue> = LazyLock::new(|| {
    Catalogue::new([
        ("en", include_str!("../locales/en/pages.ftl")),
        ("pl", include_str!("../locales/pl/pages.ftl")),
        ("de", include_str!("../locales/de/pages.ftl")),
        ("fr", include_str!("../locales/fr/pages.ftl")),
        ("es", include_str!("../locales/es/pages.ftl")),
    ])
});

/// The tenant console's texts.
pub static CONSOLE: LazyLock<Catalogue> = LazyLock::new(|| {
    Catalogue::new([
        ("en", include_str!("../locales/en/console.ftl")),
        ("pl", include_str!("../locales/pl/console.ftl")),
        ("de", include_str!("../locales/de/console.ftl")),
        ("fr", include_str!("../locales/fr/console.ftl")),
        ("es", include_str!("../locales/es/console.ftl")),
    ])
});

/// The messages mailed to end users.
pub static MAIL: LazyLock<Catalogue> = LazyLock::new(|| {
    Catalogue::new([
        ("en", include_str!("../locales/en/mail.ftl")),
        ("pl", include_str!("../locales/pl/mail.ftl")),
        ("de", include_str!("../locales/de/mail.ftl")),
        ("fr", include_str!("../locales/fr/mail.ftl")),
        ("es", include_str!("../locales/es/mail.ftl")),
    ])
});

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The ids of a catalogue source and the variables each message uses.
    fn entries(source: &str) -> Vec<(String, Vec<String>)> {
        let resource = FluentResource::try_new(source.to_owned())
            .unwrap_or_else(|(_, e)| panic!("syntax errors: {e:?}"));
        let mut out = Vec::new();
        for entry in resource.entries() {
            if let fluent_syntax::ast::Entry::Message(m) = entry {
                let text = source
                    .lines()
                    .find(|l| l.starts_with(&format!("{} =", m.id.name)))
                    .unwrap_or("");
                let mut vars: Vec<String> = text
                    .match_indices("{ $")
                    .map(|(i, _)| {
                        text[i + 3..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect()
                    })
                    .collect();
                vars.sort();
                vars.dedup();
                out.push((m.id.name.to_owned(), vars));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_language_has_every_message_with_the_same_variables() {
        let sources = [
            [
                include_str!("../locales/en/pages.ftl"),
                include_str!("../locales/pl/pages.ftl"),
                include_str!("../locales/de/pages.ftl"),
                include_str!("../locales/fr/pages.ftl"),
                include_str!("../locales/es/pages.ftl"),
            ],
            [
                include_str!("../locales/en/mail.ftl"),
                include_str!("../locales/pl/mail.ftl"),
                include_str!("../locales/de/mail.ftl"),
                include_str!("../locales/fr/mail.ftl"),
                include_str!("../locales/es/mail.ftl"),
            ],
            [
                include_str!("../locales/en/console.ftl"),
                include_str!("../locales/pl/console.ftl"),
                include_str!("../locales/de/console.ftl"),
                include_str!("../locales/fr/console.ftl"),
                include_str!("../locales/es/console.ftl"),
            ],
        ];
        for set in sources {
            let english = entries(set[0]);
            assert!(!english.is_empty());
            for (i, other) in set.iter().enumerate().skip(1) {
                assert_eq!(entries(other), english, "{}", LOCALES[i]);
            }
        }
    }

    #[test]
    fn no_message_is_left_in_english() {
        // The language's own name differs everywhere, and so does every sentence.
        for lang in &LOCALES[1..] {
            for id in [
                "verify-button",
                "reset-title",
                "error-expired",
                "join-create-button",
            ] {
                assert!(PAGES.has(lang, id));
                assert_ne!(
                    PAGES.text(lang, id, &[]),
                    PAGES.text("en", id, &[]),
                    "{lang} {id}"
                );
            }
            for id in ["console-sign-in-title", "console-users", "console-audit"] {
                assert_ne!(
                    CONSOLE.text(lang, id, &[]),
                    CONSOLE.text("en", id, &[]),
                    "{lang} {id}"
                );
            }
            assert_ne!(
                MAIL.text(lang, "verify-email-subject", &[("tenant", "Acme")]),
                MAIL.text("en", "verify-email-subject", &[("tenant", "Acme")]),
            );
        }
    }

    #[test]
    fn placeables_are_filled_without_isolation_marks() {
        let t = PAGES.text("en", "magic-title", &[("tenant", "Acme")]);
        assert_eq!(t, "Sign in to Acme");
    }

    #[test]
    fn negotiation_prefers_a_choice_then_the_header_then_the_fallback() {
        assert_eq!(negotiate(&[Some("pl")], Some("de-DE,de;q=0.9"), "en"), "pl");
        assert_eq!(
            negotiate(&[Some("xx"), None], Some("de-AT,en;q=0.5"), "en"),
            "de"
        );
        assert_eq!(
            negotiate(&[], Some("it-IT, fr;q=0.8, en;q=0.5"), "en"),
            "fr"
        );
        assert_eq!(negotiate(&[], Some("ja"), "es"), "es");
        assert_eq!(negotiate(&[], None, "en"), "en");
        assert_eq!(supported("FR-ca"), Some("fr"));
    }
}
