//! What the PID holds and where: its types (SD-JWT VC and mdoc), the paths and elements of
//! each attribute a presentation is read for, and what identifies a person.
//!
//! Its own file: the request side (`request.rs`) and the checks of an answer both read it.

use tessera_actors::tenant::settings::rules::WALLET_ATTRIBUTES;

/// The PID's type in SD-JWT VC, current and legacy.
pub const PID_VCTS: [&str; 2] = ["urn:eudi:pid:1", "urn:eu.europa.ec.eudi:pid:1"];
/// The PID's mdoc doctype (and namespace).
pub const PID_DOCTYPE: &str = "eu.europa.ec.eudi.pid.1";
/// The proof-of-age attestation's mdoc doctype (and namespace).
pub const AV_DOCTYPE: &str = "eu.europa.ec.av.1";

/// Where a requested attribute sits: its SD-JWT VC paths (current PID first, then legacy) and
/// its mdoc element.
pub fn attribute_paths(name: &str) -> (Vec<Vec<&'static str>>, &'static str) {
    match name {
        "family_name" => (vec![vec!["family_name"]], "family_name"),
        "given_name" => (vec![vec!["given_name"]], "given_name"),
        "birth_date" => (vec![vec!["birthdate"], vec!["birth_date"]], "birth_date"),
        "birth_place" => (
            vec![vec!["place_of_birth"], vec!["birth_place"]],
            "birth_place",
        ),
        "nationality" => (
            vec![vec!["nationalities"], vec!["nationality"]],
            "nationality",
        ),
        "age_over_16" => (
            vec![vec!["age_equal_or_over", "16"], vec!["age_over_16"]],
            "age_over_16",
        ),
        "age_over_18" => (
            vec![vec!["age_equal_or_over", "18"], vec!["age_over_18"]],
            "age_over_18",
        ),
        "age_over_21" => (
            vec![vec!["age_equal_or_over", "21"], vec!["age_over_21"]],
            "age_over_21",
        ),
        "resident_country" => (
            vec![vec!["address", "country"], vec!["resident_country"]],
            "resident_country",
        ),
        "resident_city" => (
            vec![vec!["address", "locality"], vec!["resident_city"]],
            "resident_city",
        ),
        "email" => (vec![vec!["email"], vec!["email_address"]], "email_address"),
        "phone_number" => (
            vec![vec!["phone_number"], vec!["mobile_phone_number"]],
            "mobile_phone_number",
        ),
        _ => (Vec::new(), ""),
    }
}

/// Every attribute a presentation is read for (each has its places in [`attribute_paths`]):
/// what identifies a person, and what a tenant may ask for.
pub fn attributes() -> impl Iterator<Item = &'static str> {
    let requestable = WALLET_ATTRIBUTES.iter().copied();
    IDENTIFYING
        .into_iter()
        .chain(requestable.filter(|a| !IDENTIFYING.contains(a)))
}

/// What identifies a person at an issuer: the PID's mandatory attributes (the PID carries no
/// identifier every issuer sets).
pub const IDENTIFYING: [&str; 5] = [
    "family_name",
    "given_name",
    "birth_date",
    "birth_place",
    "nationality",
];
