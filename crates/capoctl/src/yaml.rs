//! A clouds.yaml document as upstream's scripts see it through yq: scalars as source text (`~`
//! stays `~`, `0x1F` stays `0x1F`) with their quoting style, which a typed (serde) parser
//! resolves and forgets, and every node's place in the source, so that an entry can be cut out
//! of the text ([`cut`]) instead of being re-emitted. Built from `saphyr-parser`'s events.

pub mod cut;
mod resolve;
mod style;

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, Span, SpannedEventReceiver};

pub use saphyr_parser::ScalarStyle as Style;
pub use style::{Ctx, render_string};

/// Where a node's text is: `start..end` in characters of [`Document::chars`], and the line
/// (1-based) and column (0-based) of `start`. A block scalar starts at its first body line; a
/// block collection at its first key or dash, and its `end` is not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// Line of `start`.
    pub line: usize,
    /// Column of `start`.
    pub col: usize,
}

impl From<Span> for Pos {
    fn from(s: Span) -> Self {
        let (start, end) = (s.start.index(), s.end.index());
        let (line, col) = (s.start.line(), s.start.col());
        Pos {
            start,
            end,
            line,
            col,
        }
    }
}

/// A scalar: its text as yq prints it (quotes removed, escapes processed), style and position.
#[derive(Clone, PartialEq, Eq)]
pub struct Scalar {
    /// The text.
    pub value: String,
    /// Quoting style in the source.
    pub style: Style,
    /// Where it is.
    pub pos: Pos,
}

/// A node of the document; aliases are expanded (a copy keeps the anchored node's position).
#[derive(Clone, PartialEq, Eq)]
pub enum Node {
    /// A scalar value.
    Scalar(Scalar),
    /// A mapping, entries in source order.
    Map {
        /// Written as `{...}` in the source.
        flow: bool,
        /// Where it is.
        pos: Pos,
        /// Key/value pairs in source order.
        entries: Vec<(Node, Node)>,
    },
    /// A sequence.
    Seq {
        /// Written as `[...]` in the source.
        flow: bool,
        /// Where it is.
        pos: Pos,
        /// Items in source order.
        items: Vec<Node>,
    },
}

// Debug deliberately prints structure only: nodes hold passwords and secrets.
impl std::fmt::Debug for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scalar(<value hidden>)")
    }
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Node::Scalar(s) => s.fmt(f),
            Node::Map { entries, .. } => write!(f, "Map({} entries)", entries.len()),
            Node::Seq { items, .. } => write!(f, "Seq({} items)", items.len()),
        }
    }
}

impl Node {
    /// The key and value under `key` when this is a mapping (keys compared by text, as yq
    /// does), looking into `<<` merge keys when the mapping has no such key itself, as yq does.
    pub fn entry(&self, key: &str) -> Option<(&Scalar, &Node)> {
        self.own(key).or_else(|| match self.own("<<")?.1 {
            Node::Seq { items, .. } => items.iter().find_map(|m| m.entry(key)),
            m => m.entry(key),
        })
    }

    /// The mapping's own entry `key`, not looking into merge keys (where yq assigns).
    pub fn own(&self, key: &str) -> Option<(&Scalar, &Node)> {
        let Node::Map { entries, .. } = self else {
            return None;
        };
        entries.iter().find_map(|(k, v)| match k {
            Node::Scalar(s) if s.value == key => Some((s, v)),
            _ => None,
        })
    }

    /// The value under `key` (see [`Node::entry`]).
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The scalar, if this is one.
    pub fn as_scalar(&self) -> Option<&Scalar> {
        match self {
            Node::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// Where the node is.
    pub fn pos(&self) -> Pos {
        match self {
            Node::Scalar(s) => s.pos,
            Node::Map { pos, .. } | Node::Seq { pos, .. } => *pos,
        }
    }

    /// A `{...}` or `[...]` collection.
    pub fn is_flow(&self) -> bool {
        matches!(
            self,
            Node::Map { flow: true, .. } | Node::Seq { flow: true, .. }
        )
    }

    /// The node and everything under it.
    pub fn walk(&self) -> Vec<&Node> {
        let children: Vec<&Node> = match self {
            Node::Scalar(_) => Vec::new(),
            Node::Map { entries, .. } => entries.iter().flat_map(|(k, v)| [k, v]).collect(),
            Node::Seq { items, .. } => items.iter().collect(),
        };
        std::iter::once(self)
            .chain(children.into_iter().flat_map(Node::walk))
            .collect()
    }
}

/// A parsed document: the tree, and the text a cut copies.
pub struct Document {
    /// The source, without a byte-order mark, as characters (positions count characters).
    pub chars: Vec<char>,
    /// The first document's root; `None` when it is empty.
    pub root: Option<Node>,
    /// Scalars and flow collections, whose text is copied as is.
    tokens: Vec<Token>,
}

// The source holds passwords.
impl std::fmt::Debug for Document {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Document({} characters)", self.chars.len())
    }
}

/// A scalar or flow collection: text that cutting copies as it is.
#[derive(Debug, Clone, Copy)]
struct Token {
    pos: Pos,
    /// A `|` or `>` scalar, whose lines keep their relative indentation.
    block: bool,
    /// Blank lines ending a `|+` or `>+` scalar's value.
    trailing: usize,
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

/// Parse the first document of `text`.
pub fn parse(text: &str) -> Result<Document, SyntaxError> {
    // A byte-order mark (editors on Windows add one) is not content.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut b = Builder {
        chars: text.chars().collect(),
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
        tokens: Vec::new(),
    };
    Parser::new_from_str(text)
        .load(&mut b, false)
        .map_err(|e| {
            // One message quotes the offending character, which may belong to a secret.
            let reason = e.info().split(": `").next().unwrap_or_default();
            SyntaxError {
                reason: reason.to_string(),
                line: e.marker().line(),
                column: e.marker().col() + 1,
            }
        })?;
    let (chars, root, tokens) = (b.chars, b.root, b.tokens);
    Ok(Document {
        chars,
        root,
        tokens,
    })
}

/// A collection being built: mapping or not, anchor id, position, children.
type Open = (bool, usize, Pos, Vec<Node>);

struct Builder {
    chars: Vec<char>,
    stack: Vec<Open>,
    /// Anchored nodes, for expanding aliases.
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    tokens: Vec<Token>,
}

impl Builder {
    fn push_node(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            Some(open) => open.3.push(node),
            None => {
                self.root.get_or_insert(node);
            }
        }
    }

    fn token(&mut self, pos: Pos, block: bool, trailing: usize) {
        self.tokens.push(Token {
            pos,
            block,
            trailing,
        });
    }
}

impl<'input> SpannedEventReceiver<'input> for Builder {
    fn on_event(&mut self, ev: Event<'input>, span: Span) {
        match ev {
            Event::Scalar(value, style, anchor, _) => {
                let mut pos = Pos::from(span);
                let quote = match style {
                    Style::SingleQuoted => Some('\''),
                    Style::DoubleQuoted => Some('"'),
                    _ => None,
                };
                // The span starts at a tag or anchor if there is one.
                let open = quote.and_then(|q| (pos.start..pos.end).find(|&i| self.chars[i] == q));
                if let (Some(q), Some(open)) = (quote, open) {
                    pos.end = pos.end.min(quoted_end(&self.chars, open, q));
                }
                let block = matches!(style, Style::Literal | Style::Folded);
                let breaks = value.len() - value.trim_end_matches('\n').len();
                self.token(pos, block, if block { breaks.saturating_sub(1) } else { 0 });
                let value = value.into_owned();
                self.push_node(Node::Scalar(Scalar { value, style, pos }), anchor);
            }
            Event::MappingStart(anchor, _) => self.stack.push((true, anchor, span.into(), vec![])),
            Event::SequenceStart(anchor, _) => {
                self.stack.push((false, anchor, span.into(), vec![]));
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let Some((map, anchor, mut pos, items)) = self.stack.pop() else {
                    return;
                };
                // A flow collection's start event points at its `{` or `[`.
                let flow = matches!(self.chars.get(pos.start), Some('{' | '['));
                if flow {
                    // The end event's span also covers the blanks and comment after `}`/`]`.
                    pos.end = span.start.index() + 1;
                    self.token(pos, false, 0);
                }
                let node = if map {
                    let mut it = items.into_iter();
                    let mut entries = Vec::new();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        entries.push((k, v));
                    }
                    Node::Map { flow, pos, entries }
                } else {
                    Node::Seq { flow, pos, items }
                };
                self.push_node(node, anchor);
            }
            Event::Alias(id) => {
                let node = self.anchors.get(&id).cloned().unwrap_or_else(|| {
                    let (value, style, pos) = (String::new(), Style::Plain, span.into());
                    Node::Scalar(Scalar { value, style, pos })
                });
                self.push_node(node, 0);
            }
            _ => {}
        }
    }
}

/// One past the quote closing the scalar that opens with `q` at `start`. saphyr-parser's span of
/// a quoted scalar also covers the blanks and comment after it.
fn quoted_end(chars: &[char], start: usize, q: char) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if q == '"' => i += 1,
            '\'' if q == '\'' && chars.get(i + 1) == Some(&'\'') => i += 1,
            c if c == q => return i + 1,
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    fn root(text: &str) -> Node {
        parse(text).unwrap().root.unwrap()
    }

    #[test]
    fn keeps_styles_and_source_text() {
        let doc = root("a: ~\nb: 'x'\nc: \"y\"\nd: 0x1F\ne: {f: 1}\ng: [1]\n");
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
        let doc = root("\u{feff}d: &d {u: 1}\nm:\n  <<: *d\n  v: 2\n");
        let m = doc.get("m").unwrap();
        assert_eq!(m.get("u").unwrap().as_scalar().unwrap().value, "1");
        assert!(m.get("w").is_none());
    }

    #[test]
    fn expands_aliases() {
        let doc = root("a: &x {b: 1}\nc: *x\n");
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
        let doc = parse("password: hunter2\n").unwrap();
        assert!(!format!("{doc:?}").contains("hunter2"));
        assert!(!format!("{:?}", doc.root.unwrap()).contains("hunter2"));
    }
}
