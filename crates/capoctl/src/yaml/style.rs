//! How yq (go-yaml v3) writes a string it was given (`strenv()`, a key of a yq expression): plain
//! when that reads back as the same string (and go-yaml's own checks agree), else single-quoted
//! when printable, else double-quoted.

use super::resolve::resolves_to_string;
use super::{Style, parse};

/// Where a scalar is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctx {
    /// A block mapping value or sequence item.
    Block,
    /// Inside `{...}` or `[...]`.
    Flow,
    /// A block mapping key.
    Key,
}

/// `value` written as a string in `ctx`, keeping `old` (the style of the value it replaces) when
/// that can hold it: plain text that would read back as another type is double-quoted (go-yaml's
/// `forceQuoting`). Block styles and line breaks are written double-quoted (the same string).
pub fn render_string(value: &str, old: Style, ctx: Ctx) -> String {
    let printable = value.chars().all(is_printable);
    let string = old == Style::Plain && resolves_to_string(value);
    if string && printable && reads_back_plain(value, ctx) {
        value.to_string()
    } else if printable && (string || old == Style::SingleQuoted) {
        format!("'{}'", value.replace('\'', "''"))
    } else {
        double_quoted(value)
    }
}

/// Whether `value` written plain in `ctx` parses back as itself. go-yaml also quotes indicators
/// (a key's text would parse), what starts like a document marker, YAML 1.1 line breaks and, in
/// flow context, any flow indicator or `:`.
fn reads_back_plain(value: &str, ctx: Ctx) -> bool {
    let chars: Vec<char> = value.chars().collect();
    // `- `, `? ` and `: ` (or at the end) start a sequence, key or value wherever YAML is read.
    let indicator = chars.iter().enumerate().any(|(i, &c)| {
        (c == ':' || (i == 0 && (c == '-' || c == '?')))
            && chars.get(i + 1).is_none_or(|&n| n == ' ')
    });
    if value.is_empty()
        || indicator
        || value.starts_with(|c| "#,[]{}&*!|>'\"%@`".contains(c))
        || value.starts_with("---")
        || value.starts_with("...")
        || value.contains(['\u{85}', '\u{2028}', '\u{2029}'])
        || (ctx == Ctx::Flow && value.contains(|c| ",?[]{}:".contains(c)))
    {
        return false;
    }
    let text = match ctx {
        Ctx::Block => format!("k: {value}\n"),
        Ctx::Flow => format!("{{k: {value}}}\n"),
        Ctx::Key => format!("{value}: v\n"),
    };
    let Some(root) = parse(&text).ok().and_then(|d| d.root) else {
        return false;
    };
    let plain = |s: &super::Scalar, v: &str| s.style == Style::Plain && s.value == v;
    match ctx {
        Ctx::Key => root
            .own(value)
            .is_some_and(|(k, v)| plain(k, value) && v.as_scalar().is_some_and(|s| plain(s, "v"))),
        _ => root
            .get("k")
            .and_then(|v| v.as_scalar())
            .is_some_and(|s| plain(s, value)),
    }
}

/// go-yaml's double-quoted form: `"` and `\` escaped, non-printable characters as escapes.
fn double_quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) <= 0xFF => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// YAML's printable set (go-yaml `is_printable`).
fn is_printable(c: char) -> bool {
    let u = c as u32;
    (0x20..=0x7E).contains(&u)
        || (0xA1..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
        || (0x10000..=0x10FFFF).contains(&u)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    #[test]
    fn matches_yq_choices() {
        let plain = |v: &str, ctx| render_string(v, Style::Plain, ctx);
        for (v, want) in [
            ("abc", 0),
            ("p#ss", 0),
            ("x\"y", 0),
            ("it's", 0),
            ("a: b", 1),
            (" sp", 1),
            ("*star", 1),
            ("@at", 1),
            ("- x", 1),
            ("tab\there", 2),
        ] {
            let written = [v.to_string(), format!("'{v}'"), double_quoted(v)];
            assert_eq!(plain(v, Ctx::Block), written[want], "{v:?}");
        }
        assert_eq!(plain("a,b", Ctx::Flow), "'a,b'");
        assert_eq!(render_string("", Style::SingleQuoted, Ctx::Key), "''");
    }

    #[test]
    fn escapes_like_go_yaml() {
        assert_eq!(double_quoted("a\"b\\c\td\u{1}"), "\"a\\\"b\\\\c\\td\\x01\"");
    }
}
