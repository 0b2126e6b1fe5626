//! A small YAML document model that keeps what yq keeps: each scalar's source text and quoting
//! style, and whether a collection was written in flow (`{}` / `[]`) or block style.
//!
//! upstream's helper scripts pipe clouds.yaml through yq, which prints scalars as their source text
//! (`~` stays `~`, `0x1F` stays `0x1F`) and re-emits selected sub-trees keeping quote styles. A
//! typed parser (serde) resolves and forgets both, so this module builds its own tree from the
//! event stream of `yaml-rust2`.

mod comments;
mod emit;
mod resolve;
mod style;

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

pub use comments::Comments;
pub use emit::{emit_document, emit_with_comments};
pub use resolve::resolves_to_string;

/// How a scalar was quoted in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Unquoted.
    Plain,
    /// `'...'`
    SingleQuoted,
    /// `"..."`
    DoubleQuoted,
    /// `|` block.
    Literal,
    /// `>` block.
    Folded,
}

/// A scalar: its (unescaped) text, style and explicit tag if any.
#[derive(Clone, PartialEq, Eq)]
pub struct Scalar {
    /// The scalar's text as yq prints it (quotes removed, escapes processed).
    pub value: String,
    /// Quoting style in the source.
    pub style: Style,
    /// Explicit tag such as `!!str`, if the source had one.
    pub tag: Option<String>,
    /// A string whatever its text looks like (a value set by yq's `strenv()` or a key from a yq
    /// expression); plain text that would read back as a number etc. gets quoted.
    pub forced_str: bool,
    /// 1-based source line where the scalar starts (0 for nodes made up by this program).
    pub line: usize,
    /// 0-based source column where the scalar starts.
    pub col: usize,
}

/// A node of the document.
#[derive(Clone, PartialEq, Eq)]
pub enum Node {
    /// A scalar value.
    Scalar(Scalar),
    /// A mapping, entries in source order.
    Map {
        /// Written as `{...}` in the source.
        flow: bool,
        /// Key/value pairs in source order.
        entries: Vec<(Node, Node)>,
    },
    /// A sequence.
    Seq {
        /// Written as `[...]` in the source.
        flow: bool,
        /// Items in source order.
        items: Vec<Node>,
    },
}

// Debug deliberately prints structure only: nodes hold passwords and secrets.
impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Scalar(_) => f.write_str("Scalar(<value hidden>)"),
            Node::Map { entries, .. } => write!(f, "Map({} entries)", entries.len()),
            Node::Seq { items, .. } => write!(f, "Seq({} items)", items.len()),
        }
    }
}

impl Node {
    /// A plain scalar node.
    pub fn plain(value: impl Into<String>) -> Self {
        Node::Scalar(Scalar {
            value: value.into(),
            style: Style::Plain,
            tag: None,
            forced_str: false,
            line: 0,
            col: 0,
        })
    }

    /// The value under `key` when this is a mapping (keys compared by text, as yq does), looking
    /// into `<<` merge keys when the mapping has no such key itself, as yq does.
    pub fn get(&self, key: &str) -> Option<&Node> {
        let Node::Map { entries, .. } = self else {
            return None;
        };
        let key_is = |k: &Node, name: &str| matches!(k, Node::Scalar(s) if s.value == name);
        if let Some((_, v)) = entries.iter().find(|(k, _)| key_is(k, key)) {
            return Some(v);
        }
        entries
            .iter()
            .filter(|(k, _)| key_is(k, "<<"))
            .find_map(|(_, merged)| match merged {
                Node::Seq { items, .. } => items.iter().find_map(|m| m.get(key)),
                m => m.get(key),
            })
    }

    /// Mutable access to the value under `key` when this is a mapping.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match self {
            Node::Map { entries, .. } => entries
                .iter_mut()
                .find(|(k, _)| matches!(k, Node::Scalar(s) if s.value == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The scalar, if this is one.
    pub fn as_scalar(&self) -> Option<&Scalar> {
        match self {
            Node::Scalar(s) => Some(s),
            _ => None,
        }
    }
}

/// Source line of the first scalar in `node` (0 when it has none or was made up).
pub fn first_line(node: &Node) -> usize {
    first_scalar(node).map_or(0, |s| s.line)
}

/// Source column of the first scalar in `node`.
pub fn first_col(node: &Node) -> usize {
    first_scalar(node).map_or(0, |s| s.col)
}

fn first_scalar(node: &Node) -> Option<&Scalar> {
    match node {
        Node::Scalar(s) => Some(s),
        Node::Map { entries, .. } => entries.first().and_then(|(k, _)| first_scalar(k)),
        Node::Seq { items, .. } => items.first().and_then(first_scalar),
    }
}

/// Last source line holding content of `node` (block scalars count their body lines).
pub fn last_line(node: &Node) -> usize {
    match node {
        Node::Scalar(s) if matches!(s.style, Style::Literal | Style::Folded) && s.line > 0 => {
            s.line + s.value.trim_end_matches('\n').matches('\n').count() + 1
        }
        Node::Scalar(s) if is_empty_plain(s) => 0,
        Node::Scalar(s) => s.line,
        Node::Map { entries, .. } => entries
            .iter()
            .map(|(k, v)| last_line(k).max(last_line(v)))
            .max()
            .unwrap_or(0),
        Node::Seq { items, .. } => items.iter().map(last_line).max().unwrap_or(0),
    }
}

/// `key:` with nothing after it: the parser places this scalar at the next token.
fn is_empty_plain(s: &Scalar) -> bool {
    s.value.is_empty() && s.style == Style::Plain && s.tag.is_none()
}

/// Find and place the comments of a cloud entry (see [`comments`]).
pub fn collect_comments(text: &str, entry: &Node, key: &Scalar, end: usize) -> Comments {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    comments::collect(text, entry, key.line, key.col, end)
}

/// Where and why parsing failed. The reason never quotes document content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Human-readable reason.
    pub reason: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
}

/// Parse the first document of `text`. An empty document yields `None`.
pub fn parse(text: &str) -> Result<Option<Node>, SyntaxError> {
    // A byte-order mark (editors on Windows add one) is not content.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let chars: Vec<char> = text.chars().collect();
    let mut builder = Builder {
        chars: &chars,
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
    };
    let mut parser = Parser::new_from_str(text);
    parser.load(&mut builder, false).map_err(|e| SyntaxError {
        reason: safe_reason(e.info()),
        line: e.marker().line(),
        column: e.marker().col() + 1,
    })?;
    Ok(builder.root)
}

/// yaml-rust2 quotes the offending character in one message; that character may belong to a
/// secret, so drop it.
fn safe_reason(info: &str) -> String {
    if info.contains('`') {
        info.split(':').next().unwrap_or("syntax error").to_string()
    } else {
        info.to_string()
    }
}

/// A collection being built, with the anchor it will be registered under.
enum Open {
    Map(bool, usize, Vec<Node>),
    Seq(bool, usize, Vec<Node>),
}

struct Builder<'a> {
    chars: &'a [char],
    stack: Vec<Open>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
}

impl Builder<'_> {
    /// A collection is in flow style when its start event points at `{` or `[`.
    fn is_flow(&self, mark: Marker, open: char) -> bool {
        self.chars.get(mark.index()) == Some(&open)
    }

    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            Some(Open::Map(_, _, items) | Open::Seq(_, _, items)) => items.push(node),
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
        }
    }
}

impl MarkedEventReceiver for Builder<'_> {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(value, style, anchor, tag) => {
                let style = match style {
                    TScalarStyle::Plain => Style::Plain,
                    TScalarStyle::SingleQuoted => Style::SingleQuoted,
                    TScalarStyle::DoubleQuoted => Style::DoubleQuoted,
                    TScalarStyle::Literal => Style::Literal,
                    TScalarStyle::Folded => Style::Folded,
                };
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let scalar = Scalar {
                    value,
                    style,
                    tag,
                    forced_str: false,
                    line: mark.line(),
                    col: mark.col(),
                };
                self.push_node(Node::Scalar(scalar), anchor);
            }
            Event::MappingStart(anchor, _) => {
                let flow = self.is_flow(mark, '{');
                self.stack.push(Open::Map(flow, anchor, Vec::new()));
            }
            Event::SequenceStart(anchor, _) => {
                let flow = self.is_flow(mark, '[');
                self.stack.push(Open::Seq(flow, anchor, Vec::new()));
            }
            Event::MappingEnd | Event::SequenceEnd => match self.stack.pop() {
                Some(Open::Map(flow, anchor, items)) => {
                    let mut entries = Vec::with_capacity(items.len() / 2);
                    let mut it = items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        entries.push((k, v));
                    }
                    self.push_node(Node::Map { flow, entries }, anchor);
                }
                Some(Open::Seq(flow, anchor, items)) => {
                    self.push_node(Node::Seq { flow, items }, anchor);
                }
                None => {}
            },
            // Aliases are expanded: the output must stand alone without the anchor's definition.
            Event::Alias(id) => {
                let node = self
                    .anchors
                    .get(&id)
                    .cloned()
                    .unwrap_or_else(|| Node::plain(""));
                self.push_node(node, 0);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    #[test]
    fn keeps_styles_and_source_text() {
        let doc = parse("a: ~\nb: 'x'\nc: \"y\"\nd: 0x1F\ne: {f: 1}\ng: [1]\n")
            .unwrap()
            .unwrap();
        let s = |k: &str| doc.get(k).unwrap().as_scalar().unwrap().clone();
        assert_eq!(s("a").value, "~");
        assert_eq!(s("b").style, Style::SingleQuoted);
        assert_eq!(s("c").style, Style::DoubleQuoted);
        assert_eq!(s("d").value, "0x1F");
        assert!(matches!(doc.get("e"), Some(Node::Map { flow: true, .. })));
        assert!(matches!(doc.get("g"), Some(Node::Seq { flow: true, .. })));
    }

    #[test]
    fn looks_into_merge_keys() {
        let doc = parse("\u{feff}d: &d {u: 1}\nm:\n  <<: *d\n  v: 2\n")
            .unwrap()
            .unwrap();
        let m = doc.get("m").unwrap();
        assert_eq!(m.get("u").unwrap().as_scalar().unwrap().value, "1");
        assert!(m.get("w").is_none());
    }

    #[test]
    fn expands_aliases() {
        let doc = parse("a: &x {b: 1}\nc: *x\n").unwrap().unwrap();
        assert_eq!(doc.get("a"), doc.get("c"));
    }

    #[test]
    fn syntax_errors_carry_position_not_content() {
        let err = parse("a: \"secret-value\nb: [").unwrap_err();
        assert!(err.line >= 1);
        assert!(!err.reason.contains("secret"));
    }

    #[test]
    fn debug_hides_values() {
        let doc = parse("password: hunter2\n").unwrap().unwrap();
        assert!(!format!("{doc:?}").contains("hunter2"));
    }
}
