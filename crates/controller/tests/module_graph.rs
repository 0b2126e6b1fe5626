//! Module import circles: the module dependency graph of a crate, computed from its source
//! files, and its strongly connected components of more than one module.
//!
//! A module is a source file: `src/lib.rs` is the crate root, `src/a/b.rs` and
//! `src/a/b/mod.rs` are `a::b`. Module A depends on module B when A's file names B by a path:
//! a `use` tree (grouped ones included, `use crate::{a, b::c}`), or a `crate::`, `super::`,
//! `self::` path anywhere in the code, or a path that starts with one of A's child modules
//! (`child::item`). The edge goes to the deepest existing module the path names
//! (`crate::a::b::Item` → `a::b` if that is a module, else `a`). Comments and string literals
//! are skipped; a `mod child;` declaration alone is not an edge (the parent owns the child, it
//! does not use it), nor is a visibility (`pub(in crate::a)` names an ancestor and uses
//! nothing of it); inline modules (`mod tests { ... }`) belong to their file's module, but
//! `super::` and `self::` inside them are resolved from where they stand.
//!
//! The tests read the workspace's sources relative to this crate's manifest directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path: its segments below the crate root (the root is empty).
type ModPath = Vec<String>;

/// `crate` for the root, else `a::b`.
fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_owned()
    } else {
        m.join("::")
    }
}

/// A token of Rust source, as much of it as paths need.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Paren,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    Other,
}

/// Splits `src` into tokens, dropping whitespace, comments, string, char and number literals.
fn lex(src: &str) -> Vec<Tok> {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < n && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0usize;
            while i < n {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if ch == '"' {
            i = skip_string(&c, i + 1);
        } else if ch == '\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a, 'static).
            if at(i + 1) == '\\' {
                i += 2;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
                while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(Tok::Other);
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let prefix = matches!(word.as_str(), "b" | "c" | "r" | "br" | "cr");
            if prefix && at(i) == '"' {
                if word.contains('r') {
                    i = skip_raw_string(&c, i);
                } else {
                    i = skip_string(&c, i + 1);
                }
            } else if word.contains('r') && prefix && at(i) == '#' && {
                let mut j = i;
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            } {
                i = skip_raw_string(&c, i);
            } else if word == "b" && at(i) == '\'' {
                i += 1;
                if at(i) == '\\' {
                    i += 1;
                }
                i += 1;
                while i < n && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if word == "r" && at(i) == '#' {
                // A raw identifier: r#type.
                let start = i + 1;
                i += 1;
                while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(Tok::Ident(c[start..i].iter().collect()));
            } else {
                out.push(Tok::Ident(word));
            }
        } else if ch.is_ascii_digit() {
            while i < n && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Other);
        } else {
            i += 1;
            out.push(match ch {
                ':' if at(i) == ':' => {
                    i += 1;
                    Tok::PathSep
                }
                '(' => Tok::Paren,
                '{' => Tok::Open,
                '}' => Tok::Close,
                ',' => Tok::Comma,
                ';' => Tok::Semi,
                '*' => Tok::Star,
                _ => Tok::Other,
            });
        }
    }
    out
}

/// The index after a string literal whose body starts at `i`.
fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// The index after a raw string literal whose `#`s (or opening quote) start at `i`.
fn skip_raw_string(c: &[char], mut i: usize) -> usize {
    let mut hashes = 0;
    while i < c.len() && c[i] == '#' {
        hashes += 1;
        i += 1;
    }
    i += 1; // the opening quote
    while i < c.len() {
        if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
            return i + 1 + hashes;
        }
        i += 1;
    }
    i
}

/// The full paths of the use tree starting at `toks[*pos]`, each with `prefix` in front.
/// A leading `::` (an extern crate) is kept as a `::` segment, which no module matches.
fn use_tree(toks: &[Tok], pos: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let mut path = prefix.to_vec();
    if toks.get(*pos) == Some(&Tok::PathSep) {
        path.push("::".to_owned());
        *pos += 1;
    }
    loop {
        match toks.get(*pos) {
            Some(Tok::Open) => {
                *pos += 1;
                while !matches!(toks.get(*pos), Some(Tok::Close) | None) {
                    let before = *pos;
                    use_tree(toks, pos, &path, out);
                    if toks.get(*pos) == Some(&Tok::Comma) || *pos == before {
                        *pos += 1;
                    }
                }
                *pos += 1;
                return;
            }
            Some(Tok::Star) => {
                *pos += 1;
                out.push(path);
                return;
            }
            Some(Tok::Ident(seg)) => {
                path.push(seg.clone());
                *pos += 1;
                if toks.get(*pos) == Some(&Tok::PathSep) {
                    *pos += 1;
                    continue;
                }
                if toks.get(*pos) == Some(&Tok::Ident("as".to_owned())) {
                    *pos += 2;
                }
                out.push(path);
                return;
            }
            _ => {
                // Not a use tree after all (a macro pattern, say): stop here.
                out.push(path);
                return;
            }
        }
    }
}

/// A crate's module graph: every module, and for each the modules it names (with the first
/// path that named each, for the report).
#[derive(Debug, Default)]
struct Graph {
    edges: BTreeMap<ModPath, BTreeMap<ModPath, String>>,
}

impl Graph {
    /// The graph of a crate whose source files are `files`: paths relative to `src/` with
    /// their text. `bin/` and `main.rs` are other crates and must not be passed with `lib.rs`.
    fn from_sources(files: &[(PathBuf, String)]) -> Graph {
        let modules: BTreeMap<ModPath, &str> = files
            .iter()
            .map(|(path, text)| (module_of(path), text.as_str()))
            .collect();
        let known: BTreeSet<ModPath> = modules.keys().cloned().collect();
        let mut graph = Graph::default();
        for (module, text) in &modules {
            let targets = graph.edges.entry(module.clone()).or_default();
            for (path, target) in references(module, text, &known) {
                if &target != module {
                    targets.entry(target).or_insert(path);
                }
            }
        }
        graph
    }

    /// The graph of the crate whose `src` directory is `src`.
    fn of_crate(src: &Path) -> Graph {
        let mut files = Vec::new();
        collect_rs(src, src, &mut files);
        files.retain(|(p, _)| !p.starts_with("bin") && p != Path::new("main.rs"));
        assert!(
            files.iter().any(|(p, _)| p == Path::new("lib.rs")),
            "{} has no lib.rs",
            src.display()
        );
        Graph::from_sources(&files)
    }

    /// The graph of the modules `keep` accepts, with the edges among them only.
    fn restricted(&self, keep: impl Fn(&[String]) -> bool) -> Graph {
        let edges = self
            .edges
            .iter()
            .filter(|(m, _)| keep(m))
            .map(|(m, targets)| {
                let targets = targets
                    .iter()
                    .filter(|(t, _)| keep(t))
                    .map(|(t, p)| (t.clone(), p.clone()))
                    .collect();
                (m.clone(), targets)
            })
            .collect();
        Graph { edges }
    }

    /// The strongly connected components of more than one module, each sorted, in order.
    fn circles(&self) -> Vec<Vec<ModPath>> {
        let mut tarjan = Tarjan {
            graph: self,
            next: 0,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for m in self.edges.keys() {
            if !tarjan.index.contains_key(m) {
                tarjan.visit(m);
            }
        }
        let mut found: Vec<Vec<ModPath>> = tarjan
            .found
            .into_iter()
            .filter(|c| c.len() > 1)
            .map(|mut c| {
                c.sort();
                c
            })
            .collect();
        found.sort();
        found
    }

    /// `circle` for a reader: its modules and the references between them.
    fn describe(&self, circle: &[ModPath]) -> String {
        let names: Vec<String> = circle.iter().map(|m| show(m)).collect();
        let mut text = format!("[{}]", names.join(", "));
        for m in circle {
            for (t, path) in &self.edges[m] {
                if circle.contains(t) {
                    text.push_str(&format!("\n    {} -> {}  ({path})", show(m), show(t)));
                }
            }
        }
        text
    }
}

/// Tarjan's strongly connected components.
struct Tarjan<'g> {
    graph: &'g Graph,
    next: usize,
    index: BTreeMap<&'g ModPath, usize>,
    low: BTreeMap<&'g ModPath, usize>,
    stack: Vec<&'g ModPath>,
    on_stack: BTreeSet<&'g ModPath>,
    found: Vec<Vec<ModPath>>,
}

impl<'g> Tarjan<'g> {
    fn visit(&mut self, m: &'g ModPath) {
        self.index.insert(m, self.next);
        self.low.insert(m, self.next);
        self.next += 1;
        self.stack.push(m);
        self.on_stack.insert(m);
        let graph = self.graph;
        for t in graph.edges.get(m).into_iter().flat_map(|ts| ts.keys()) {
            if !self.index.contains_key(t) {
                self.visit(t);
                let low = self.low[m].min(self.low[t]);
                self.low.insert(m, low);
            } else if self.on_stack.contains(t) {
                let low = self.low[m].min(self.index[t]);
                self.low.insert(m, low);
            }
        }
        if self.low[m] == self.index[m] {
            let mut component = Vec::new();
            while let Some(top) = self.stack.pop() {
                self.on_stack.remove(top);
                component.push(top.clone());
                if top == m {
                    break;
                }
            }
            self.found.push(component);
        }
    }
}

/// `a/b.rs`, `a/b/mod.rs` → `a::b`; `lib.rs` → the root.
fn module_of(path: &Path) -> ModPath {
    let mut segs: Vec<String> = path
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if segs.last().is_some_and(|s| s == "mod") || segs == ["lib"] {
        segs.pop();
    }
    segs
}

/// Every `.rs` file under `dir`, as (path relative to `root`, text).
fn collect_rs(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_rs(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path.strip_prefix(root).unwrap().to_path_buf(), text));
        }
    }
}

/// The modules that the file of `module` names, each with the path that named it.
fn references(module: &ModPath, text: &str, known: &BTreeSet<ModPath>) -> Vec<(String, ModPath)> {
    let toks = lex(text);
    let mut found = Vec::new();
    let mut depth = 0usize;
    // Inline modules open around the current token: (name, brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let here = |inline: &[(String, usize)]| -> ModPath {
        let mut m = module.clone();
        m.extend(inline.iter().map(|(name, _)| name.clone()));
        m
    };
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Tok::Open => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
                i += 1;
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            Tok::Ident(word) if word == "mod" => {
                if let (Some(Tok::Ident(name)), Some(Tok::Open)) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    pending_mod = Some(name.clone());
                }
                i += 2;
            }
            Tok::Ident(word)
                if word == "in"
                    && i >= 2
                    && toks[i - 1] == Tok::Paren
                    && toks[i - 2] == Tok::Ident("pub".to_owned()) =>
            {
                // A visibility, `pub(in crate::a)`: it names an ancestor, and uses nothing.
                i += 1;
                while matches!(toks.get(i), Some(Tok::Ident(_) | Tok::PathSep)) {
                    i += 1;
                }
            }
            Tok::Ident(word) if word == "use" => {
                let mut pos = i + 1;
                let mut paths = Vec::new();
                use_tree(&toks, &mut pos, &[], &mut paths);
                let cur = here(&inline);
                for path in paths {
                    if let Some(target) = resolve(&cur, &path, known) {
                        found.push((path.join("::"), target));
                    }
                }
                i = pos;
            }
            Tok::Ident(first)
                if toks.get(i + 1) == Some(&Tok::PathSep)
                    && (i == 0 || toks[i - 1] != Tok::PathSep) =>
            {
                let mut path = vec![first.clone()];
                let mut j = i + 1;
                while toks.get(j) == Some(&Tok::PathSep) {
                    let Some(Tok::Ident(seg)) = toks.get(j + 1) else {
                        break;
                    };
                    path.push(seg.clone());
                    j += 2;
                }
                if let Some(target) = resolve(&here(&inline), &path, known) {
                    found.push((path.join("::"), target));
                }
                i = j;
            }
            _ => i += 1,
        }
    }
    found
}

/// The deepest existing module that `path`, written in module `cur`, names; `None` for a
/// path into another crate (or a local item that is not a module).
fn resolve(cur: &[String], path: &[String], known: &BTreeSet<ModPath>) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    let mut full: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "self" => cur.to_vec(),
        "super" => cur[..cur.len().checked_sub(1)?].to_vec(),
        _ => {
            let mut child = cur.to_vec();
            child.push(first.clone());
            if !known.contains(&child) {
                return None;
            }
            child
        }
    };
    let mut rest = rest.iter().peekable();
    while let Some(seg) = rest.next_if(|s| *s == "super" || *s == "self") {
        if seg == "super" {
            full.pop()?;
        }
    }
    full.extend(rest.filter(|s| *s != "self").cloned());
    (0..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|m| known.contains(m))
}

/// The `src` directory of workspace crate `dir` (`api`, `cloud`, ...).
fn src_of(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir)
        .join("src")
}

/// The circles among the modules of crate `dir` whose path starts with `area`, printed.
fn circles_in(dir: &str, area: &str) -> Vec<String> {
    let graph =
        Graph::of_crate(&src_of(dir)).restricted(|m| m.first().is_some_and(|first| first == area));
    let circles: Vec<String> = graph.circles().iter().map(|c| graph.describe(c)).collect();
    eprintln!("{dir}: circles among {area}*: {}", circles.len());
    for c in &circles {
        eprintln!("  {c}");
    }
    circles
}

#[test]
fn no_circles_in_api_conversion() {
    let circles = circles_in("api", "conversion");
    assert!(
        circles.is_empty(),
        "module circles in capo-api's conversion: {circles:#?}"
    );
}

#[test]
fn no_circles_in_cloud_loadbalancer() {
    let circles = circles_in("cloud", "loadbalancer");
    assert!(
        circles.is_empty(),
        "module circles in capo-cloud's loadbalancer: {circles:#?}"
    );
}

#[test]
fn no_circles_in_controller_cluster() {
    let circles = circles_in("controller", "cluster");
    assert!(
        circles.is_empty(),
        "module circles in capo-controller's cluster: {circles:#?}"
    );
}

/// The circles among all modules of crate `dir`, printed.
fn crate_circles(dir: &str) -> Vec<String> {
    let graph = Graph::of_crate(&src_of(dir));
    let circles: Vec<String> = graph.circles().iter().map(|c| graph.describe(c)).collect();
    eprintln!("capo-{dir}: {} module circle(s)", circles.len());
    for c in &circles {
        eprintln!("  {c}");
    }
    circles
}

#[test]
fn no_circles_in_capo_controller() {
    let circles = crate_circles("controller");
    assert!(
        circles.is_empty(),
        "module circles in capo-controller: {circles:#?}"
    );
}

/// The controllers' own modules (each kind's reconcile and what only it uses).
const CONTROLLER_MODULES: &[&str] = &[
    "cluster",
    "machine",
    "server",
    "pool",
    "machine_template",
    "identity_secret",
    "storage_migration",
];

/// What every controller builds on: none of it may name a controller's module, so a
/// controller's state and code stay with the controller.
const SHARED_MODULES: &[&str] = &[
    "context",
    "memo",
    "pace",
    "informers",
    "runtime",
    "lifecycle",
    "credentials",
    "recent_reads",
    "status",
];

#[test]
fn shared_modules_name_no_controller_module() {
    let graph = Graph::of_crate(&src_of("controller"));
    let mut found = Vec::new();
    for (module, targets) in &graph.edges {
        if !module
            .first()
            .is_some_and(|m| SHARED_MODULES.contains(&m.as_str()))
        {
            continue;
        }
        for (target, path) in targets {
            if target
                .first()
                .is_some_and(|t| CONTROLLER_MODULES.contains(&t.as_str()))
            {
                found.push(format!("{} -> {} ({path})", show(module), show(target)));
            }
        }
    }
    assert!(
        found.is_empty(),
        "shared modules naming a controller: {found:#?}"
    );
}

/// `files` as the graph code takes them.
fn sources(files: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
    files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect()
}

fn m(path: &str) -> ModPath {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn graph_finds_a_circle() {
    let graph = Graph::from_sources(&sources(&[
        ("lib.rs", "mod a; mod b; mod c; mod d;"),
        ("a.rs", "use crate::b::Thing;\nfn f() -> i32 { 1 }"),
        ("b.rs", "pub struct Thing;\nfn g() { crate::c::h(); }"),
        (
            "c/mod.rs",
            "mod inner;\npub fn h() { let x = super::a::f(); }",
        ),
        (
            "c/inner.rs",
            "// use crate::d; is a comment\nconst S: &str = \"crate::d::X\";",
        ),
        ("d.rs", "fn k() { crate::c::inner::nothing(); }"),
    ]));
    assert_eq!(graph.circles(), vec![vec![m("a"), m("b"), m("c")]]);
    // The comment and the string name nothing; d names c::inner, the deepest module.
    assert!(graph.edges[&m("c::inner")].is_empty());
    assert_eq!(
        graph.edges[&m("d")].keys().collect::<Vec<_>>(),
        vec![&m("c::inner")]
    );
}

#[test]
fn graph_without_circles_passes() {
    let graph = Graph::from_sources(&sources(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub use a::Thing;"),
        (
            "a.rs",
            "pub struct Thing;\nmod inner;\npub use inner::g;\nmod tests { use super::*; }",
        ),
        ("a/inner.rs", "pub(in crate::a) fn g() {}"),
        (
            "b.rs",
            "use crate::a::Thing;\nfn f(t: Thing) -> std::io::Result<()> { Ok(()) }",
        ),
    ]));
    assert!(graph.circles().is_empty());
    // The root re-exports from a: an edge; `mod` declarations are not.
    assert_eq!(
        graph.edges[&m("")].keys().collect::<Vec<_>>(),
        vec![&m("a")]
    );
    // super:: inside an inline module is `a` itself; a visibility names no dependency.
    assert_eq!(
        graph.edges[&m("a")].keys().collect::<Vec<_>>(),
        vec![&m("a::inner")]
    );
    assert!(graph.edges[&m("a::inner")].is_empty());
}

#[test]
fn grouped_use_is_parsed() {
    let graph = Graph::from_sources(&sources(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        (
            "a.rs",
            "use crate::{b::{self, Item as I}, c::d::{e, f::*}};\nuse std::{fmt, io};",
        ),
        ("b.rs", ""),
        ("c.rs", "mod d;"),
        ("c/d.rs", ""),
        ("c/d/f.rs", "use super::super::{self as up};"),
    ]));
    assert_eq!(
        graph.edges[&m("a")].keys().collect::<Vec<_>>(),
        vec![&m("b"), &m("c::d"), &m("c::d::f")]
    );
    assert_eq!(
        graph.edges[&m("c::d::f")].keys().collect::<Vec<_>>(),
        vec![&m("c")]
    );
    // `b::{...}` came from `crate::{b::{...}}`: the prefix is kept for each member.
    assert_eq!(graph.edges[&m("a")][&m("c::d::f")], "crate::c::d::f");
    assert!(graph.circles().is_empty());
}
