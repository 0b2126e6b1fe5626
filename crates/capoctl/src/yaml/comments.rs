//! Comments inside a cloud entry, placed where yq (go-yaml v3) puts them when it re-emits the
//! entry: above a key or sequence item (head), after the content of a line (line), or after a
//! block's last entry (foot). The event parser does not report comments, so they are found in the
//! source text and tied to nodes by line and column.
//!
//! go-yaml's rules, as observed: a run of comment lines belongs to the next key unless it is
//! indented deeper than that key, in which case it is the foot of the deepest block that ends just
//! before it and whose entries are not indented deeper than the comment. Blank lines between
//! comments of one run are kept (one each), blank lines around a run are dropped.

use std::collections::HashMap;

use super::Node;

/// Comments of one entry, keyed by source line.
#[derive(Default)]
pub struct Comments {
    line: HashMap<usize, String>,
    head: HashMap<usize, Vec<String>>,
    foot: HashMap<(usize, usize), Vec<String>>,
}

// Comments may be commented-out passwords: Debug shows counts only.
impl std::fmt::Debug for Comments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Comments({} line, {} head, {} foot)",
            self.line.len(),
            self.head.len(),
            self.foot.len()
        )
    }
}

/// Comment lines with their source line numbers, before blank lines are decided.
type Runs<K> = HashMap<K, Vec<(usize, String)>>;

impl Comments {
    /// The `# ...` after the content on `line`.
    pub fn line(&self, line: usize) -> Option<&str> {
        self.line.get(&line).map(String::as_str)
    }
    /// Comment lines (`""` for a kept blank line) above the key or item starting on `line`.
    pub fn head(&self, line: usize) -> &[String] {
        self.head.get(&line).map_or(&[], Vec::as_slice)
    }
    /// Comment lines after the block collection `node`.
    pub fn foot(&self, node: &Node) -> &[String] {
        self.foot.get(&block_key(node)).map_or(&[], Vec::as_slice)
    }
}

/// A block collection: its first line, the column of its entries, its last content line.
struct Block {
    first: usize,
    col: usize,
    last: usize,
}

/// A block collection's identity: first line and the column of its keys or dashes (a sequence
/// and its first item start on the same line).
fn block_key(node: &Node) -> (usize, usize) {
    let col = match node {
        Node::Seq { .. } => super::first_col(node).saturating_sub(2),
        _ => super::first_col(node),
    };
    (super::first_line(node), col)
}

/// Find and place the comments of `entry`, whose key is at `key_line`/`key_col`; the entry's
/// text ends before line `end` (the next cloud's key, or past the end of the file).
pub fn collect(text: &str, entry: &Node, key_line: usize, key_col: usize, end: usize) -> Comments {
    let lines: Vec<&str> = text.lines().collect();
    let mut index = Index::default();
    walk(entry, &mut index);
    let ctx = Ctx {
        blocks: &index.blocks,
        key_col,
        first_key: super::first_line(entry),
    };
    let (mut heads, mut feet) = (Runs::new(), Runs::new());
    let mut line_comments = HashMap::new();
    let mut run: Vec<(usize, usize, String)> = Vec::new();
    let mut prev = key_line;
    for n in key_line + 1..end.min(lines.len() + 1) {
        let l = lines[n - 1];
        if l.trim().is_empty() {
            continue;
        }
        if !index.content.contains(&n) && l.trim_start().starts_with('#') {
            run.push((n, l.len() - l.trim_start().len(), l.trim().to_string()));
            continue;
        }
        if let Some(i) = comment_start(l) {
            line_comments.insert(n, l[i..].trim_end().to_string());
        }
        let next = index.starts.get(&n).map(|&col| (n, col));
        ctx.place(&run, prev, next, &mut heads, &mut feet);
        run.clear();
        prev = n;
    }
    ctx.place(&run, prev, None, &mut heads, &mut feet);
    Comments {
        line: line_comments,
        head: with_gaps(heads),
        foot: with_gaps(feet),
    }
}

struct Ctx<'a> {
    blocks: &'a [Block],
    key_col: usize,
    first_key: usize,
}

impl Ctx<'_> {
    /// Assign one run of comment lines between content line `prev` and the key/item `next`.
    fn place(
        &self,
        run: &[(usize, usize, String)],
        prev: usize,
        next: Option<(usize, usize)>,
        heads: &mut Runs<usize>,
        feet: &mut Runs<(usize, usize)>,
    ) {
        let next_col = next.map_or(self.key_col, |(_, c)| c);
        for (line, col, text) in run {
            let foot = self
                .blocks
                .iter()
                .filter(|b| *col > next_col && b.last == prev && b.col > next_col && b.col <= *col)
                .max_by_key(|b| b.col);
            let target = match (foot, next) {
                (Some(b), _) => feet.entry((b.first, b.col)).or_default(),
                (None, Some((n, _))) if n != self.first_key => heads.entry(n).or_default(),
                _ => continue,
            };
            target.push((*line, text.clone()));
        }
    }
}

/// Keep one blank line where the source had blank lines between two comments of a run.
fn with_gaps<K: std::hash::Hash + Eq>(runs: Runs<K>) -> HashMap<K, Vec<String>> {
    runs.into_iter()
        .map(|(k, run)| {
            let mut out = Vec::with_capacity(run.len());
            for (i, (line, text)) in run.iter().enumerate() {
                if i > 0 && *line > run[i - 1].0 + 1 {
                    out.push(String::new());
                }
                out.push(text.clone());
            }
            (k, out)
        })
        .collect()
}

/// Where things are in the source.
#[derive(Default)]
struct Index {
    blocks: Vec<Block>,
    /// Column of the key or `-` that starts each line that starts one.
    starts: HashMap<usize, usize>,
    /// Lines holding scalar text (block scalars span several).
    content: std::collections::HashSet<usize>,
}

/// Record blocks, key/item start columns and content lines of `node`.
fn walk(node: &Node, ix: &mut Index) {
    match node {
        // An empty plain value is reported at the next token's position: it has no line.
        Node::Scalar(s) if s.line > 0 && !super::is_empty_plain(s) => {
            let extra = if matches!(s.style, super::Style::Literal | super::Style::Folded) {
                s.value.trim_end_matches('\n').matches('\n').count() + 1
            } else {
                0
            };
            ix.content.extend(s.line..=s.line + extra);
        }
        Node::Map { flow, entries } => {
            for (k, v) in entries {
                if !flow && let Node::Scalar(s) = k {
                    start(ix, s.line, s.col);
                }
                walk(k, ix);
                walk(v, ix);
            }
            block(node, ix);
        }
        Node::Seq { flow, items } => {
            for item in items {
                if !flow {
                    // The dash sits two columns left of the item's text.
                    let col = super::first_col(item).saturating_sub(2);
                    start(ix, super::first_line(item), col);
                }
                walk(item, ix);
            }
            block(node, ix);
        }
        Node::Scalar(_) => {}
    }
}

fn start(ix: &mut Index, line: usize, col: usize) {
    let c = ix.starts.entry(line).or_insert(col);
    *c = (*c).min(col);
}

fn block(node: &Node, ix: &mut Index) {
    if let Node::Map {
        flow: false,
        entries,
    } = node
        && entries.is_empty()
    {
        return;
    }
    if matches!(
        node,
        Node::Map { flow: false, .. } | Node::Seq { flow: false, .. }
    ) {
        let (first, col) = block_key(node);
        ix.blocks.push(Block {
            first,
            col,
            last: super::last_line(node),
        });
    }
}

/// Byte index of a `#` that starts a comment on `line`: at the start, or after a blank, and not
/// inside a quoted scalar (a quote opens one only where a value can start).
pub fn comment_start(line: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    let mut last_token = ' '; // previous non-blank character outside quotes
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match quote {
            Some('"') if c == '\\' => {
                chars.next();
            }
            Some('\'') if c == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                chars.next();
            }
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if (c == '"' || c == '\'')
                && matches!(last_token, ' ' | ':' | '-' | '[' | '{' | ',' | '?') =>
            {
                quote = Some(c)
            }
            None if c == '#' && (prev == ' ' || prev == '\t' || i == 0) => return Some(i),
            None => {}
        }
        if quote.is_none() && !c.is_whitespace() {
            last_token = c;
        }
        prev = c;
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    #[test]
    fn comment_start_skips_quoted_hashes() {
        assert_eq!(comment_start("a: b # c"), Some(5));
        assert_eq!(comment_start("a: 'x # y' # z"), Some(11));
        assert_eq!(comment_start("a: \"x \\\" # y\""), None);
        assert_eq!(comment_start("a: o'brien # c"), Some(11));
        assert_eq!(comment_start("a: p#ss"), None);
    }

    #[test]
    fn head_line_and_foot_comments() {
        let text =
            "clouds:\n  c:\n    auth:\n      # head\n      u: 1 # line\n      # foot\n    r: 2\n";
        let doc = crate::yaml::parse(text).unwrap().unwrap();
        let Some(Node::Map { entries, .. }) = doc.get("clouds") else {
            panic!()
        };
        let (key, entry) = &entries[0];
        let cx = crate::yaml::collect_comments(text, entry, key.as_scalar().unwrap(), usize::MAX);
        assert_eq!(cx.head(5), ["# head"]);
        assert_eq!(cx.line(5), Some("# line"));
        assert_eq!(cx.foot(entry.get("auth").unwrap()), ["# foot"]);
        assert!(!format!("{cx:?}").contains("# head"));
    }
}
