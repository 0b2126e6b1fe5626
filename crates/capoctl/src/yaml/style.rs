//! go-yaml v3's choice of how to write a scalar: a requested plain style falls back to single
//! quotes when plain text would be misread, and to double quotes when single quotes cannot
//! hold the text either (`yaml_emitter_analyze_scalar` / `select_scalar_style`).

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

/// What the text allows.
struct Analysis {
    flow_plain: bool,
    block_plain: bool,
    single_quoted: bool,
}

fn is_blank(c: Option<char>) -> bool {
    matches!(
        c,
        None | Some(' ' | '\t' | '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
    )
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            flow_plain: false,
            block_plain: true,
            single_quoted: true,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let doc_marker = value.starts_with("---") || value.starts_with("...");
    let (flow_ind, block_ind) = indicators(&chars);
    let sp = spacing(&chars);
    let special = chars
        .iter()
        .any(|&c| !super::emit::is_printable(c) && c != '\n');
    let plain_blocked = sp.at_edges || sp.line_breaks || doc_marker;
    if sp.mixed || special {
        return Analysis {
            flow_plain: false,
            block_plain: false,
            single_quoted: false,
        };
    }
    Analysis {
        flow_plain: !(plain_blocked || flow_ind),
        block_plain: !(plain_blocked || block_ind),
        single_quoted: true,
    }
}

/// Whether some character would be read as YAML syntax in flow / block context.
fn indicators(chars: &[char]) -> (bool, bool) {
    let (mut flow, mut block) = (false, false);
    let mut preceded_by_ws = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws = is_blank(chars.get(i + 1).copied());
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(c) || (c == '-' && followed_by_ws) {
                (flow, block) = (true, true);
            }
            if c == '?' || c == ':' {
                flow = true;
                block |= followed_by_ws;
            }
        } else {
            flow |= ",?[]{}".contains(c);
            if c == ':' {
                flow = true;
                block |= followed_by_ws;
            }
            if c == '#' && preceded_by_ws {
                (flow, block) = (true, true);
            }
        }
        preceded_by_ws = is_blank(Some(c));
    }
    (flow, block)
}

/// Spaces and line breaks that plain or single-quoted text cannot carry.
struct Spacing {
    /// A space or break first or last.
    at_edges: bool,
    line_breaks: bool,
    /// A space next to a break.
    mixed: bool,
}

fn spacing(chars: &[char]) -> Spacing {
    let mut sp = Spacing {
        at_edges: false,
        line_breaks: false,
        mixed: false,
    };
    let (mut prev_space, mut prev_break) = (false, false);
    for (i, &c) in chars.iter().enumerate() {
        let edge = i == 0 || i + 1 == chars.len();
        let is_break = matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}');
        if c == ' ' || is_break {
            sp.at_edges |= edge;
            sp.mixed |= if is_break { prev_space } else { prev_break };
        }
        sp.line_breaks |= is_break;
        (prev_space, prev_break) = (c == ' ', is_break);
    }
    sp
}

/// The style go-yaml writes for a scalar that asked for plain: 0 plain, 1 single, 2 double.
pub fn plain_fallback(value: &str, ctx: Ctx) -> u8 {
    let a = analyze(value);
    let plain = match ctx {
        Ctx::Flow => a.flow_plain,
        Ctx::Block => a.block_plain,
        Ctx::Key => a.block_plain && !value.is_empty(),
    };
    if plain {
        0
    } else if a.single_quoted {
        1
    } else {
        2
    }
}

/// Whether single quotes can hold the text (else go-yaml switches to double quotes).
pub fn single_quotable(value: &str) -> bool {
    analyze(value).single_quoted
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;

    #[test]
    fn matches_yq_choices() {
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
            assert_eq!(plain_fallback(v, Ctx::Block), want, "{v:?}");
        }
        assert_eq!(plain_fallback("a,b", Ctx::Flow), 1);
        assert_eq!(plain_fallback("", Ctx::Key), 1);
    }
}
