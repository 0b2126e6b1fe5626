//! A node's text cut out of the source and re-indented the way yq (go-yaml v3, indent 2) prints
//! it: quoting styles, flow collections, block scalars and comments are the source's own.
//!
//! What is normalised, as go-yaml does: two spaces per level with block sequences indented under
//! their key, one space between tokens (none before `:`) and before a `# comment`, no trailing
//! blanks, lines continuing a flow collection or scalar joined. Comments follow go-yaml's
//! placement: a run of comment lines belongs to the next key or item (and takes its
//! indentation) unless indented deeper, in which case it closes the deepest block it is not
//! shallower than; comments above the first key are dropped; of blank lines, only those between
//! comments of one run (one each) and inside block scalars are kept.

use std::collections::HashMap;
use std::ops::Range;

use super::{Document, Node, Scalar, Style, Token};

/// A change made while cutting. No `Debug`: it carries the password.
pub enum Edit {
    /// Write the text in place of the source characters in the range (an insertion when empty).
    Replace(Range<usize>, String),
    /// Add lines (indented relative to the block's entries) at the end of the block under the key
    /// on the given source line, after the comments that close it.
    Append(usize, Vec<String>),
}

/// The edit that writes `text` in place of `value`, the scalar under `key` (a block scalar's
/// header included; an empty value gets a space after the colon).
pub fn replace_value(doc: &Document, key: &Scalar, value: &Scalar, text: String) -> Edit {
    let chars = &doc.chars;
    let after_key = |c: &[char]| (key.pos.end..chars.len()).find(|&i| c.contains(&chars[i]));
    let after_key = |c| after_key(c).unwrap_or(key.pos.end);
    match value.style {
        Style::Literal | Style::Folded => {
            let body = value.pos.start..value.pos.end;
            let end = body.rev().find(|&i| !chars[i].is_whitespace());
            Edit::Replace(
                after_key(&['|', '>'])..end.map_or(value.pos.start, |i| i + 1),
                text,
            )
        }
        // Blanks before `}` or `,` are dropped with it, those before a comment kept.
        _ if value.pos.start == value.pos.end => {
            let colon = after_key(&[':']) + 1;
            let end = (colon..chars.len())
                .find(|&i| !matches!(chars[i], ' ' | '\t'))
                .filter(|&i| matches!(chars[i], ',' | '}' | ']'));
            Edit::Replace(colon..end.unwrap_or(colon), format!(" {text}"))
        }
        _ => Edit::Replace(value.pos.start..value.pos.end, text),
    }
}

/// The edit that adds `entry` (`key: value`) at the end of the flow mapping `map`.
pub fn insert_in_flow(map: &Node, entry: &str) -> Option<Edit> {
    let Node::Map {
        flow: true,
        pos,
        entries,
    } = map
    else {
        return None;
    };
    let at = entries.last().map_or(pos.start + 1, |(_, v)| v.pos().end);
    let sep = if entries.is_empty() { "" } else { ", " };
    Some(Edit::Replace(at..at, format!("{sep}{entry}")))
}

/// Whether the text of `value`, the value of `key`, stands alone: no alias in it refers to an
/// anchor outside it (the tree's copy of an alias keeps the anchored node's position).
pub fn stands_alone(doc: &Document, key: &Scalar, value: &Node) -> bool {
    let c = Cutter::new(doc, None);
    let range = c.start(key.pos.line)..c.end(c.last_line(key, value));
    value.walk().iter().all(|n| range.contains(&n.pos().start))
}

/// The text of `value`, the value of `key`: a block's entries indented by `indent`, after a
/// `head:` line indented two less when `head` is given; a flow collection on one line (after
/// `head: `). Newline-terminated.
pub fn cut(
    doc: &Document,
    key: &Scalar,
    value: &Node,
    indent: usize,
    head: Option<&str>,
    edit: Option<&Edit>,
) -> String {
    let mut c = Cutter::new(doc, edit);
    let head_indent = indent.saturating_sub(2);
    let flow = value
        .is_flow()
        .then(|| c.line_text(value.pos().start, value.pos().end).0);
    match (head, flow) {
        (Some(h), flow) => {
            c.out_of_line.insert(key.pos.line, 0);
            let flow = flow.map(|f| format!(" {f}")).unwrap_or_default();
            c.out.push((head_indent, format!("{h}:{flow}")));
        }
        (None, Some(flow)) => c.out.push((indent, flow)),
        (None, None) => {}
    }
    c.block(key, value, indent);
    if let Some(Edit::Append(line, lines)) = edit {
        c.append(*line, lines);
    }
    c.out
        .iter()
        .map(|(indent, text)| match text.is_empty() {
            true => "\n".to_string(),
            false => format!("{}{text}\n", " ".repeat(*indent)),
        })
        .collect()
}

/// A `-` that starts a block sequence item.
fn is_dash(chars: &[char], i: usize) -> bool {
    chars.get(i) == Some(&'-') && chars.get(i + 1).is_none_or(|c| " \t\r\n".contains(*c))
}

/// An open block: the source column of its keys or dashes, their output indentation, and
/// whether it is a sequence.
#[derive(Clone, Copy)]
struct Level {
    src: usize,
    out: usize,
    seq: bool,
}

/// A run of comment lines: source line, column, text.
type Run = Vec<(usize, usize, String)>;

struct Cutter<'a> {
    chars: &'a [char],
    tokens: &'a [Token],
    /// Character index where each line (1-based, so index `line - 1`) starts.
    starts: Vec<usize>,
    edit: Option<&'a Edit>,
    /// Output lines: indentation and text (empty for a blank line).
    out: Vec<(usize, String)>,
    /// Output line of each source line that starts a key or item.
    out_of_line: HashMap<usize, usize>,
}

impl<'a> Cutter<'a> {
    fn new(doc: &'a Document, edit: Option<&'a Edit>) -> Self {
        let breaks = doc.chars.iter().enumerate().filter(|(_, c)| **c == '\n');
        Cutter {
            chars: &doc.chars,
            tokens: &doc.tokens,
            starts: std::iter::once(0)
                .chain(breaks.map(|(i, _)| i + 1))
                .collect(),
            edit,
            out: Vec::new(),
            out_of_line: HashMap::new(),
        }
    }

    fn start(&self, line: usize) -> usize {
        self.starts
            .get(line - 1)
            .copied()
            .unwrap_or(self.chars.len())
    }

    /// Index of the line's `\n` (or the end of the text).
    fn end(&self, line: usize) -> usize {
        self.starts.get(line).map_or(self.chars.len(), |s| s - 1)
    }

    /// The line's first non-blank character, if any.
    fn first(&self, line: usize) -> Option<usize> {
        (self.start(line)..self.end(line)).find(|&i| !" \t\r".contains(self.chars[i]))
    }

    /// The last line of `value`'s text: up to the first non-blank line not indented deeper
    /// than `key` (a sequence's dashes may sit at the key's column).
    fn last_line(&self, key: &Scalar, value: &Node) -> usize {
        let seq = matches!(value, Node::Seq { .. });
        (key.pos.line + 1..=self.starts.len())
            .filter_map(|line| Some((line, self.first(line)?)))
            .take_while(|&(line, first)| {
                let col = first - self.start(line);
                col > key.pos.col || (col == key.pos.col && seq && is_dash(self.chars, first))
            })
            .last()
            .map_or(key.pos.line, |(line, _)| line)
    }

    /// The lines after the key's.
    fn block(&mut self, key: &Scalar, value: &Node, indent: usize) {
        let last = self.last_line(key, value);
        let mut stack: Vec<Level> = Vec::new();
        let mut run = Run::new();
        // Output indentation of the last key or item, which a block scalar's body follows.
        let mut parent = indent;
        let mut blanks = 0;
        // The block scalar whose body the previous lines were.
        let mut body: Option<Token> = None;
        let mut line = key.pos.line;
        while line < last {
            line += 1;
            let start = self.start(line);
            let Some(first) = self.first(line) else {
                blanks += 1;
                continue;
            };
            let col = first - start;
            let tok = self.token_at(first);
            if let Some(b) = body.take_if(|b| tok.is_none_or(|t| t.pos != b.pos)) {
                self.blank_lines(b.trailing);
            }
            match tok {
                // A block scalar's body keeps its indentation relative to its first line.
                Some(tok) if tok.block => {
                    if tok.pos.start < start {
                        self.blank_lines(blanks);
                    }
                    let text = self.line_with_comment(first).0;
                    let indent = parent + 2 + col.saturating_sub(tok.pos.col);
                    self.out.push((indent, text));
                    (blanks, body) = (0, Some(tok));
                    continue;
                }
                // A quoted, plain or flow token continued from an earlier line: joined to it.
                Some(tok) if tok.pos.start < first => {
                    let text = self.line_text(first, usize::MAX).0;
                    match self.out.last_mut() {
                        Some((_, prev)) if blanks == 0 => *prev = format!("{prev} {text}"),
                        _ => self.out.push((parent + 2, text)),
                    }
                    blanks = 0;
                    continue;
                }
                _ => {}
            }
            blanks = 0;
            if self.chars[first] == '#' {
                let text: String = self.chars[first..self.end(line)].iter().collect();
                run.push((line, col, text.trim_end().to_string()));
                continue;
            }
            let feet: Vec<Option<usize>> = run
                .iter()
                .map(|(_, c, _)| foot_indent(&stack, *c).filter(|_| *c > col))
                .collect();
            let had_content = !stack.is_empty();
            let level = enter(&mut stack, col, is_dash(self.chars, first), indent);
            if had_content {
                self.flush(&run, &feet, level.out);
            }
            run.clear();
            self.out_of_line.insert(line, self.out.len());
            let (text, stop) = self.line_with_comment(first);
            self.out.push((level.out, text));
            parent = self.items(&mut stack, level, first, start);
            // An edit may have consumed lines.
            line = line.max(self.starts.partition_point(|&s| s <= stop));
        }
        if let Some(b) = body {
            self.blank_lines(b.trailing);
        }
        // Comments after the last entry close a block, or belong to what follows the entry.
        run.retain(|(_, c, _)| foot_indent(&stack, *c).is_some());
        let feet: Vec<Option<usize>> = run.iter().map(|r| foot_indent(&stack, r.1)).collect();
        self.flush(&run, &feet, indent);
    }

    fn blank_lines(&mut self, n: usize) {
        self.out.extend((0..n).map(|_| (0, String::new())));
    }

    /// Open the levels of `- - x` and `- key: v`: what follows a dash is one level deeper.
    /// Returns the innermost's output indentation.
    fn items(&self, stack: &mut Vec<Level>, mut level: Level, mut i: usize, start: usize) -> usize {
        while is_dash(self.chars, i) {
            let Some(next) = (i + 1..self.chars.len())
                .find(|&j| !" \t".contains(self.chars[j]))
                .filter(|&j| !"\n\r#".contains(self.chars[j]))
            else {
                break;
            };
            let seq = is_dash(self.chars, next);
            level = Level {
                src: next - start,
                out: level.out + 2,
                seq,
            };
            stack.push(level);
            i = next;
        }
        level.out
    }

    /// Write a comment run before a line at `indent`: a foot comment at its block's indentation,
    /// a head comment at the line's; a blank line between two comments of the same kind that
    /// blank lines separated in the source.
    fn flush(&mut self, run: &Run, feet: &[Option<usize>], indent: usize) {
        let mut prev: Option<(usize, bool)> = None;
        for ((line, _, text), foot) in run.iter().zip(feet) {
            if prev.is_some_and(|(l, f)| *line > l + 1 && f == foot.is_some()) {
                self.blank_lines(1);
            }
            self.out.push((foot.unwrap_or(indent), text.clone()));
            prev = Some((*line, foot.is_some()));
        }
    }

    /// Add `lines` at the end of the block under the key on source line `line`.
    fn append(&mut self, line: usize, lines: &[String]) {
        let Some(&at) = self.out_of_line.get(&line) else {
            return;
        };
        let base = self.out[at].0;
        let inside = self.out[at + 1..]
            .iter()
            .take_while(|(indent, text)| text.is_empty() || *indent > base);
        let end = at
            + 1
            + inside
                .enumerate()
                .filter(|(_, l)| !l.1.is_empty())
                .last()
                .map_or(0, |(i, _)| i + 1);
        // go-yaml separates a new key from the comments closing the block by a blank line.
        let blank = self.out[end - 1]
            .1
            .starts_with('#')
            .then_some(String::new());
        let new = blank.into_iter().chain(lines.iter().cloned());
        let new: Vec<(usize, String)> = new.map(|text| (base + 2, text)).collect();
        self.out.splice(end..end, new);
    }

    /// The token (scalar or flow collection) covering `i`, the outermost.
    fn token_at(&self, i: usize) -> Option<Token> {
        let covering = self
            .tokens
            .iter()
            .filter(|t| t.pos.start <= i && i < t.pos.end);
        covering.max_by_key(|t| t.pos.end - t.pos.start).copied()
    }

    /// One line's text from `i`, normalised, and the index where it stopped (an edit may carry
    /// it past the line's end; `bound` stops it), with its comment.
    fn line_text(&self, mut i: usize, bound: usize) -> (String, usize, Option<String>) {
        let chars = self.chars;
        let mut out = String::new();
        let mut edit = match self.edit {
            Some(Edit::Replace(r, text)) if r.start >= i => Some((r.clone(), text.as_str())),
            _ => None,
        };
        let stop = |i: usize| i >= bound.min(chars.len()) || chars[i] == '\n';
        let blank = |c: char| " \t\r".contains(c);
        while !stop(i) {
            if let Some((r, text)) = edit.take_if(|(r, _)| r.start == i) {
                out.push_str(text);
                i = r.end;
                continue;
            }
            let edit_start = edit.as_ref().map_or(usize::MAX, |(r, _)| r.start);
            let limit = |end: usize| end.min(edit_start).min(bound);
            if let Some(tok) = self.token_at(i) {
                let end = limit(tok.pos.end);
                let to = (i..end).find(|&j| chars[j] == '\n').unwrap_or(end);
                out.extend(&chars[i..to]);
                i = to;
            } else if blank(chars[i]) {
                let end = limit(chars.len());
                i = (i..end).find(|&j| !blank(chars[j])).unwrap_or(end);
                if stop(i) {
                    break;
                }
                if chars[i] == '#' && edit_start != i {
                    let to = (i..chars.len()).find(|&j| chars[j] == '\n');
                    let to = to.unwrap_or(chars.len());
                    let comment: String = chars[i..to].iter().collect();
                    return (out, to, Some(comment.trim_end().to_string()));
                }
                if !out.is_empty() && (chars[i] != ':' || self.token_at(i).is_some()) {
                    out.push(' ');
                }
            } else {
                out.push(chars[i]);
                i += 1;
            }
        }
        (out, i, None)
    }

    /// One line's text with its comment.
    fn line_with_comment(&self, i: usize) -> (String, usize) {
        match self.line_text(i, usize::MAX) {
            (text, stop, Some(c)) if text.is_empty() => (c, stop),
            (text, stop, Some(c)) => (format!("{text} {c}"), stop),
            (text, stop, None) => (text, stop),
        }
    }
}

/// Pop the levels `col` closes and open the one it starts; the line's level.
fn enter(stack: &mut Vec<Level>, col: usize, seq: bool, indent: usize) -> Level {
    while stack.last().is_some_and(|l| l.src > col) {
        stack.pop();
    }
    // A key at the column of an indentless sequence's dashes ends the sequence.
    if stack.last().is_some_and(|l| l.src == col && l.seq && !seq) {
        stack.pop();
    }
    // Deeper, or a sequence whose dashes sit at its key's column: one level in.
    let out = match stack.last() {
        Some(l) if l.src == col && l.seq == seq => return *l,
        Some(l) => l.out + 2,
        None => indent,
    };
    let level = Level { src: col, out, seq };
    stack.push(level);
    level
}

/// Indentation of a comment closing blocks at source column `col`: that of the deepest open
/// block not deeper than it.
fn foot_indent(stack: &[Level], col: usize) -> Option<usize> {
    stack.iter().rev().find(|l| l.src <= col).map(|l| l.out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;
    use crate::yaml::parse;

    /// `src` placed under a key `r`, then its value cut at indentation 0.
    fn roundtrip(src: &str) -> String {
        let indented: String = src.lines().map(|l| format!("  {l}\n")).collect();
        let doc = parse(&format!("r:\n{indented}")).unwrap();
        let (key, value) = doc.root.as_ref().unwrap().entry("r").unwrap();
        cut(&doc, key, value, 0, None, None)
    }

    /// The entry `c` of `src` with its key, as `capoctl env` writes it.
    fn entry(src: &str, edit: impl Fn(&Document, &Scalar, &Node) -> Option<Edit>) -> String {
        let doc = parse(src).unwrap();
        let clouds = doc.root.as_ref().unwrap().get("clouds").unwrap();
        let (key, value) = clouds.entry("c").unwrap();
        cut(
            &doc,
            key,
            value,
            4,
            Some("c"),
            edit(&doc, key, value).as_ref(),
        )
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
    fn literal_blocks() {
        assert_eq!(roundtrip("a: |\n  x\n  y\n"), "a: |\n  x\n  y\n");
        assert_eq!(roundtrip("a: |-\n  x\n"), "a: |-\n  x\n");
        assert_eq!(
            roundtrip("a: >\n    x\n\n      # y\nb: 1\n"),
            "a: >\n  x\n\n    # y\nb: 1\n"
        );
    }

    #[test]
    fn hashes_in_quotes_are_not_comments() {
        for line in [
            "a: b # c",
            "a: 'x # y' # z",
            "a: \"x \\\" # y\"",
            "a: o'brien # c",
            "a: p#ss",
        ] {
            assert_eq!(roundtrip(line), format!("{line}\n"));
        }
        assert_eq!(roundtrip("a:   'x'    #   c  "), "a: 'x' #   c\n");
        assert_eq!(roundtrip("a: !!str \"x\"  # c"), "a: !!str \"x\" # c\n");
    }

    #[test]
    fn head_line_and_foot_comments() {
        let src = "clouds:\n  c:\n    # dropped\n    auth:\n        # head\n        u: 1   # line\n          # foot\n\n    # r\n    r: 2\n  # next\n  d: {}\n";
        let want =
            "  c:\n    auth:\n      # head\n      u: 1 # line\n      # foot\n    # r\n    r: 2\n";
        assert_eq!(entry(src, |_, _, _| None), want);
    }

    #[test]
    fn edits() {
        let src =
            "clouds:\n  c:\n    auth:\n      password: |\n        old\n      # foot\n    x: 1\n";
        let replaced = entry(src, |doc, _, c| {
            let (key, old) = c.get("auth").unwrap().own("password").unwrap();
            Some(replace_value(
                doc,
                key,
                old.as_scalar().unwrap(),
                "\"new\"".into(),
            ))
        });
        assert_eq!(
            replaced,
            "  c:\n    auth:\n      password: \"new\"\n      # foot\n    x: 1\n"
        );
        let appended = entry(src, |_, _, c| {
            let (key, _) = c.own("auth").unwrap();
            Some(Edit::Append(key.pos.line, vec!["y: 2".into()]))
        });
        assert!(
            appended.ends_with("      # foot\n\n      y: 2\n    x: 1\n"),
            "{appended}"
        );
        let flow = "clouds:\n  c: {auth: {password: }, b: [1,\n     2]}\n";
        let set = entry(flow, |doc, _, c| {
            let (key, old) = c.get("auth").unwrap().own("password").unwrap();
            Some(replace_value(
                doc,
                key,
                old.as_scalar().unwrap(),
                "x".into(),
            ))
        });
        assert_eq!(set, "  c: {auth: {password: x}, b: [1, 2]}\n");
        let inserted = entry(flow, |_, _, c| insert_in_flow(c, "d: e"));
        assert_eq!(inserted, "  c: {auth: {password: }, b: [1, 2], d: e}\n");
    }

    #[test]
    fn aliases_to_anchors_outside_are_found() {
        let doc =
            parse("d: &d {u: 1}\nclouds:\n  c:\n    <<: *d\n  e: &e {v: 1}\n  f: *e\n").unwrap();
        let clouds = doc.root.as_ref().unwrap().get("clouds").unwrap();
        let foreign = |name| {
            let (key, value) = clouds.entry(name).unwrap();
            !stands_alone(&doc, key, value)
        };
        assert!(foreign("c"));
        assert!(!foreign("e"));
        assert!(foreign("f"));
    }
}
