//! clusterctl's variable substitution (it uses the `drone/envsubst` library): `$NAME`,
//! `${NAME}`, `${NAME:=default}`, `${NAME:-default}` (default when unset or empty),
//! `${NAME=default}`, `${NAME-default}` (default when unset), `${NAME%pattern}` and
//! `${NAME#pattern}` (shortest glob suffix/prefix removed), and `$$` for a literal `$`.
//!
//! `capo_testkit::envsubst` knows only `${NAME}`, `:=` and `%.*`; templates may use every form
//! clusterctl accepts, and the documentation check needs the list of variables with their
//! defaults, so this module parses expressions instead of substituting them in one pass.

use std::collections::BTreeMap;

/// What an expression does with its variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `$NAME`, `${NAME}`: the value; unset is an error.
    Value,
    /// `${NAME:=d}`, `${NAME:-d}`: the value, or `d` when unset or empty.
    DefaultIfEmpty(String),
    /// `${NAME=d}`, `${NAME-d}`: the value, or `d` when unset.
    DefaultIfUnset(String),
    /// `${NAME%glob}`: the value without its shortest suffix matching the glob.
    TrimSuffix(String),
    /// `${NAME#glob}`: the value without its shortest prefix matching the glob.
    TrimPrefix(String),
}

impl Op {
    /// The default value, for the forms that have one.
    pub fn default_value(&self) -> Option<&str> {
        match self {
            Op::DefaultIfEmpty(d) | Op::DefaultIfUnset(d) => Some(d),
            _ => None,
        }
    }
}

/// A piece of a template: literal text or a variable expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text copied as is (escapes already resolved).
    Text(String),
    /// A variable expression.
    Var {
        /// The variable's name.
        name: String,
        /// What to do with it.
        op: Op,
    },
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Splits `text` into literal text and variable expressions.
pub fn parse(text: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != '$' {
            literal.push(c);
            continue;
        }
        match chars.peek().map(|&(_, n)| n) {
            Some('$') => {
                chars.next();
                literal.push('$');
            }
            Some('{') => {
                let rest = &text[i + 2..];
                let end = rest
                    .find('}')
                    .ok_or_else(|| format!("unterminated ${{ at byte {i}"))?;
                let expr = &rest[..end];
                if expr.contains(['$', '{']) {
                    return Err(format!("nested expression ${{{expr}}} is not supported"));
                }
                flush(&mut literal, &mut pieces);
                pieces.push(parse_braced(expr)?);
                // Skip `{`, the expression and `}`.
                for _ in 0..expr.chars().count() + 2 {
                    chars.next();
                }
            }
            Some(n) if is_name_start(n) => {
                let rest = &text[i + 1..];
                let len = rest.find(|c: char| !is_name_char(c)).unwrap_or(rest.len());
                flush(&mut literal, &mut pieces);
                pieces.push(Piece::Var {
                    name: rest[..len].to_owned(),
                    op: Op::Value,
                });
                for _ in 0..len {
                    chars.next();
                }
            }
            _ => literal.push('$'),
        }
    }
    flush(&mut literal, &mut pieces);
    Ok(pieces)
}

fn flush(literal: &mut String, pieces: &mut Vec<Piece>) {
    if !literal.is_empty() {
        pieces.push(Piece::Text(std::mem::take(literal)));
    }
}

fn parse_braced(expr: &str) -> Result<Piece, String> {
    let len = expr.find(|c: char| !is_name_char(c)).unwrap_or(expr.len());
    let (name, rest) = expr.split_at(len);
    if !name.starts_with(is_name_start) {
        return Err(format!("${{{expr}}}: not a variable name"));
    }
    let op = if rest.is_empty() {
        Op::Value
    } else if let Some(d) = rest.strip_prefix(":=").or_else(|| rest.strip_prefix(":-")) {
        Op::DefaultIfEmpty(d.to_owned())
    } else if let Some(d) = rest.strip_prefix('=').or_else(|| rest.strip_prefix('-')) {
        Op::DefaultIfUnset(d.to_owned())
    } else if let Some(p) = rest.strip_prefix('%') {
        Op::TrimSuffix(p.to_owned())
    } else if let Some(p) = rest.strip_prefix('#') {
        Op::TrimPrefix(p.to_owned())
    } else {
        return Err(format!("${{{expr}}}: unsupported expression"));
    };
    Ok(Piece::Var {
        name: name.to_owned(),
        op,
    })
}

/// Glob match with `*` (any run) and `?` (any one character).
fn glob(pattern: &[char], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        Some((p, rest)) => text
            .split_first()
            .is_some_and(|(t, tail)| (*p == '?' || p == t) && glob(rest, tail)),
    }
}

fn trim_suffix(value: &str, pattern: &str) -> String {
    let v: Vec<char> = value.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    (0..=v.len())
        .rev()
        .find(|&i| glob(&p, &v[i..]))
        .map_or_else(|| value.to_owned(), |i| v[..i].iter().collect())
}

fn trim_prefix(value: &str, pattern: &str) -> String {
    let v: Vec<char> = value.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    (0..=v.len())
        .find(|&i| glob(&p, &v[..i]))
        .map_or_else(|| value.to_owned(), |i| v[i..].iter().collect())
}

/// Substitutes every expression; `Err` lists each variable that is needed but unset.
pub fn render(text: &str, vars: &BTreeMap<String, String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut missing = Vec::new();
    for piece in parse(text)? {
        match piece {
            Piece::Text(t) => out.push_str(&t),
            Piece::Var { name, op } => {
                let value = vars.get(&name);
                let rendered = match (&op, value) {
                    (Op::DefaultIfEmpty(d), v) => Some(v.filter(|v| !v.is_empty()).unwrap_or(d)),
                    (Op::DefaultIfUnset(d), v) => Some(v.unwrap_or(d)),
                    (_, None) => None,
                    (_, Some(v)) => Some(v),
                };
                match (rendered, &op) {
                    (None, _) => missing.push(name),
                    (Some(v), Op::TrimSuffix(p)) => out.push_str(&trim_suffix(v, p)),
                    (Some(v), Op::TrimPrefix(p)) => out.push_str(&trim_prefix(v, p)),
                    (Some(v), _) => out.push_str(v),
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(out);
    }
    missing.sort();
    missing.dedup();
    Err(format!(
        "value for variables [{}] is not set",
        missing.join(", ")
    ))
}

/// The variables of a template: name → default (`None`: required), the way
/// `clusterctl generate cluster --list-variables` splits them. A variable used once without a
/// default is required; two different defaults for one variable are an error.
pub fn variables(text: &str) -> Result<BTreeMap<String, Option<String>>, String> {
    let mut seen: BTreeMap<String, Vec<Option<String>>> = BTreeMap::new();
    for piece in parse(text)? {
        if let Piece::Var { name, op } = piece {
            let default = op.default_value().map(str::to_owned);
            seen.entry(name).or_default().push(default);
        }
    }
    let mut out = BTreeMap::new();
    for (name, defaults) in seen {
        let mut given: Vec<&String> = defaults.iter().flatten().collect();
        given.sort();
        given.dedup();
        if given.len() > 1 {
            return Err(format!("{name} has different defaults: {given:?}"));
        }
        let required = defaults.iter().any(Option::is_none);
        let default = if required {
            None
        } else {
            given.first().map(|d| (*d).clone())
        };
        out.insert(name, default);
    }
    Ok(out)
}
