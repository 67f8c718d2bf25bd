//! The parts of a page made of sections (the console's and the account page's): a heading,
//! then paragraphs, facts, a table, links and forms, rendered by `templates/sections.html`.
//!
//! Its own file: both page families stand on it, neither borrows from the other.

use time::OffsetDateTime;

use super::pages::{ButtonView, FieldView};

/// A part of a page: a heading, then paragraphs, facts, a table, links and forms.
#[derive(Default)]
pub struct Section {
    pub heading: Option<String>,
    pub paragraphs: Vec<String>,
    /// A list of short texts shown as written (recovery codes, a key shown once).
    pub codes: Vec<String>,
    /// A QR code (inline SVG made by this server).
    pub qr: Option<String>,
    /// A chart (inline SVG made by this server from numbers only) and what it shows.
    pub chart: Option<(String, String)>,
    pub facts: Vec<(String, String)>,
    pub table: Option<Table>,
    pub links: Vec<Link>,
    pub forms: Vec<Form>,
}

pub struct Link {
    pub href: String,
    pub label: String,
}

pub struct Table {
    /// The caption's id (unique on the page).
    pub id: &'static str,
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Said instead of an empty table.
    pub empty: String,
}

pub struct Cell {
    pub text: String,
    pub href: Option<String>,
}

impl Cell {
    pub fn text(text: impl Into<String>) -> Self {
        Cell {
            text: text.into(),
            href: None,
        }
    }

    pub fn link(text: impl Into<String>, href: String) -> Self {
        Cell {
            text: text.into(),
            href: Some(href),
        }
    }
}

/// A form: `GET` (a search, no CSRF value) or `POST` (with one).
pub struct Form {
    pub action: String,
    pub get: bool,
    pub csrf: Option<String>,
    pub hidden: Vec<(&'static str, String)>,
    /// Its inputs, in order.
    pub controls: Vec<Control>,
    pub buttons: Vec<ButtonView>,
    /// Fields and button on one line (filters, single-button actions).
    pub inline: bool,
    /// The CAPTCHA widget's site key, when the form must carry a solved CAPTCHA.
    pub captcha: Option<String>,
}

impl Form {
    /// A `POST` form to `action` with one button.
    pub fn post(action: String, csrf: String, button: String, secondary: bool) -> Self {
        Form {
            action,
            get: false,
            csrf: Some(csrf),
            hidden: Vec::new(),
            controls: Vec::new(),
            buttons: vec![button_view(button, secondary)],
            inline: false,
            captcha: None,
        }
    }

    /// A `GET` form to `action` (filters) with one button.
    pub fn search(action: String, button: String) -> Self {
        Form {
            action,
            get: true,
            csrf: None,
            hidden: Vec::new(),
            controls: Vec::new(),
            buttons: vec![button_view(button, false)],
            inline: true,
            captcha: None,
        }
    }
}

fn button_view(label: String, secondary: bool) -> ButtonView {
    ButtonView {
        name: "",
        value: String::new(),
        label,
        secondary,
    }
}

/// One input of a form.
pub enum Control {
    Input(FieldView),
    Select(Select),
    /// A list, one entry a line.
    Lines(Lines),
    /// Several of a fixed set.
    Checks(CheckGroup),
}

pub struct Select {
    pub id: String,
    pub name: String,
    pub label: String,
    pub options: Vec<SelectOption>,
    pub error: Option<String>,
}

pub struct Lines {
    pub id: String,
    pub name: String,
    pub label: String,
    pub hint: Option<String>,
    pub error: Option<String>,
    pub value: String,
}

pub struct CheckGroup {
    pub legend: String,
    pub name: String,
    pub options: Vec<CheckOption>,
    pub error: Option<String>,
}

pub struct CheckOption {
    pub id: String,
    pub value: String,
    pub label: String,
    pub checked: bool,
}

pub struct SelectOption {
    pub value: String,
    pub label: String,
    pub selected: bool,
}

/// A moment as people read it in a table: `2026-11-29 14:05 UTC`.
pub fn moment(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute()
    )
}
