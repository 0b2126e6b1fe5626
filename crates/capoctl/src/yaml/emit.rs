//! Emit a [`Node`] the way yq v4 (go-yaml v3, indent 2, no line wrapping) prints it: quote styles
//! and flow collections kept, block sequences indented under their key, comments where
//! [`Comments`] places them, no other blank lines.
//!
//! Not reproduced (the output still means the same): anchors (aliases are expanded), folded (`>`)
//! scalars, which are written as literal (`|`) blocks, comments inside flow collections.

use super::style::{Ctx, plain_fallback, single_quotable};
use super::{Comments, Node, Scalar, Style, first_line};
use crate::yaml::resolves_to_string;

const INDENT: usize = 2;

/// The whole document, newline-terminated, without comments.
pub fn emit_document(node: &Node) -> String {
    emit_with_comments(node, &Comments::default())
}

/// The whole document, newline-terminated, with the comments of its source.
pub fn emit_with_comments(node: &Node, comments: &Comments) -> String {
    let mut e = Emitter {
        cx: comments,
        out: String::new(),
    };
    match node {
        n if is_block_collection(n) => e.collection(n, 0, false),
        Node::Scalar(s) if is_block(s) => {
            e.out.push_str(&block_header(s));
            e.out.push('\n');
            block_body(s, 0, &mut e.out);
        }
        other => {
            e.out.push_str(&inline(other, Ctx::Block));
            e.out.push('\n');
        }
    }
    e.out
}

struct Emitter<'a> {
    cx: &'a Comments,
    out: String,
}

impl Emitter<'_> {
    /// A block collection at `indent`; `in_item` when a sequence item's dash precedes it (its
    /// first key's head comments were written above the dash).
    fn collection(&mut self, node: &Node, indent: usize, in_item: bool) {
        match node {
            Node::Map { entries, .. } => {
                let mut foot_done = false;
                for (i, (key, value)) in entries.iter().enumerate() {
                    // yq appends new keys after the foot comments, with a blank line between.
                    if !foot_done && i > 0 && first_line(key) == 0 && !self.cx.foot(node).is_empty()
                    {
                        self.comment_lines(self.cx.foot(node), indent);
                        self.out.push('\n');
                        foot_done = true;
                    }
                    if !(in_item && i == 0) {
                        self.comment_lines(self.cx.head(first_line(key)), indent);
                    }
                    self.out.push_str(&" ".repeat(indent));
                    self.out.push_str(&inline(key, Ctx::Key));
                    self.out.push(':');
                    self.value(value, indent, first_line(key));
                }
                if foot_done {
                    return;
                }
            }
            Node::Seq { items, .. } => {
                for item in items {
                    self.comment_lines(self.cx.head(first_line(item)), indent);
                    self.item(item, indent);
                }
            }
            Node::Scalar(_) => return,
        }
        self.comment_lines(self.cx.foot(node), indent);
    }

    fn item(&mut self, item: &Node, indent: usize) {
        if is_block_collection(item) {
            // Render the item one level deeper, then put the dash into its first line's indent.
            let outer = std::mem::take(&mut self.out);
            self.collection(item, indent + INDENT, true);
            let inner = std::mem::replace(&mut self.out, outer);
            self.out.push_str(&" ".repeat(indent));
            self.out.push_str("- ");
            self.out.push_str(&inner[indent + INDENT..]);
        } else {
            self.out.push_str(&" ".repeat(indent));
            self.out.push('-');
            self.value(item, indent, first_line(item));
        }
    }

    /// What follows `key:` or `-` on source line `line`: an inline value, a block scalar, or a
    /// nested collection; that line's comment goes at the end of the output line.
    fn value(&mut self, value: &Node, indent: usize, line: usize) {
        let comment = self
            .cx
            .line(line)
            .map(|c| format!(" {c}"))
            .unwrap_or_default();
        match value {
            Node::Scalar(s) if is_block(s) => {
                self.out.push(' ');
                self.out.push_str(&block_header(s));
                self.out.push_str(&comment);
                self.out.push('\n');
                block_body(s, indent + INDENT, &mut self.out);
            }
            v if is_block_collection(v) => {
                self.out.push_str(&comment);
                self.out.push('\n');
                self.collection(v, indent + INDENT, false);
            }
            v => {
                let text = inline(v, Ctx::Block);
                if !text.is_empty() {
                    self.out.push(' ');
                    self.out.push_str(&text);
                }
                self.out.push_str(&comment);
                self.out.push('\n');
            }
        }
    }

    fn comment_lines(&mut self, lines: &[String], indent: usize) {
        for l in lines {
            if !l.is_empty() {
                self.out.push_str(&" ".repeat(indent));
                self.out.push_str(l);
            }
            self.out.push('\n');
        }
    }
}

/// A scalar as it appears after `key: `, as a key, or inside a flow collection.
fn scalar_text(s: &Scalar, ctx: Ctx) -> String {
    let style = match s.style {
        // A string whose text would read back as another type is double-quoted (go-yaml's
        // `forceQuoting`); otherwise plain unless the text needs quotes.
        Style::Plain if s.forced_str && !resolves_to_string(&s.value) => 2,
        Style::Plain => plain_fallback(&s.value, ctx),
        Style::SingleQuoted if single_quotable(&s.value) => 1,
        _ => 2,
    };
    let body = match style {
        0 => s.value.clone(),
        1 => format!("'{}'", s.value.replace('\'', "''")),
        _ => double_quoted(&s.value),
    };
    match &s.tag {
        Some(tag) if body.is_empty() => tag.clone(),
        Some(tag) => format!("{tag} {body}"),
        None => body,
    }
}

fn is_block(s: &Scalar) -> bool {
    matches!(s.style, Style::Literal | Style::Folded)
        || (s.style == Style::Plain && s.value.contains('\n'))
}

fn is_block_collection(node: &Node) -> bool {
    match node {
        Node::Map { flow, entries } => !flow && !entries.is_empty(),
        Node::Seq { flow, items } => !flow && !items.is_empty(),
        Node::Scalar(_) => false,
    }
}

/// A node on one line: scalars, and collections in flow style.
fn inline(node: &Node, ctx: Ctx) -> String {
    match node {
        Node::Scalar(s) => scalar_text(s, ctx),
        Node::Map { entries, .. } => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    let v = inline(v, Ctx::Flow);
                    if v.is_empty() {
                        format!("{}:", inline(k, Ctx::Flow))
                    } else {
                        format!("{}: {v}", inline(k, Ctx::Flow))
                    }
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Node::Seq { items, .. } => {
            let parts: Vec<String> = items.iter().map(|i| inline(i, Ctx::Flow)).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// `|`, `|-` or `|+` (plus an indentation indicator when the text starts with a space).
fn block_header(s: &Scalar) -> String {
    let trailing = s.value.len() - s.value.trim_end_matches('\n').len();
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let indicator = if s.value.starts_with(' ') { "2" } else { "" };
    let tag = s.tag.as_ref().map(|t| format!("{t} ")).unwrap_or_default();
    format!("{tag}|{indicator}{chomp}")
}

fn block_body(s: &Scalar, indent: usize, out: &mut String) {
    let body = s.value.strip_suffix('\n').unwrap_or(&s.value);
    for line in body.split('\n') {
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
        out.push('\n');
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
pub(super) fn is_printable(c: char) -> bool {
    let u = c as u32;
    (0x20..=0x7E).contains(&u)
        || (0xA1..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
        || (0x10000..=0x10FFFF).contains(&u)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::super::parse;
    use super::*;

    fn roundtrip(src: &str) -> String {
        emit_document(&parse(src).unwrap().unwrap())
    }

    #[test]
    fn normalises_indentation_and_keeps_styles() {
        let src = "a:\n    b:   \"x\"\n    c: 'y'\nd:\n- 1\n- k: v\n  j: [1, 2]\ne: {}\n";
        assert_eq!(
            roundtrip(src),
            "a:\n  b: \"x\"\n  c: 'y'\nd:\n  - 1\n  - k: v\n    j: [1, 2]\ne: {}\n"
        );
    }

    #[test]
    fn empty_and_null_values() {
        assert_eq!(roundtrip("a:\nb: ~\n"), "a:\nb: ~\n");
    }

    #[test]
    fn nested_sequences_share_the_dash_line() {
        assert_eq!(roundtrip("s:\n- - x\n  - y\n"), "s:\n  - - x\n    - y\n");
    }

    #[test]
    fn escapes_like_go_yaml() {
        assert_eq!(double_quoted("a\"b\\c\td\u{1}"), "\"a\\\"b\\\\c\\td\\x01\"");
    }

    #[test]
    fn literal_blocks() {
        assert_eq!(roundtrip("a: |\n  x\n  y\n"), "a: |\n  x\n  y\n");
        assert_eq!(roundtrip("a: |-\n  x\n"), "a: |-\n  x\n");
    }
}
