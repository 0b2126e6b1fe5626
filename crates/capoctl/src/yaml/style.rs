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
    let mut flow_ind = value.starts_with("---") || value.starts_with("...");
    let mut block_ind = flow_ind;
    let (mut leading_space, mut trailing_space, mut break_space, mut space_break) =
        (false, false, false, false);
    let (mut line_breaks, mut special, mut edge_break) = (false, false, false);
    let (mut prev_space, mut prev_break, mut preceded_by_ws) = (false, false, true);
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws = is_blank(chars.get(i + 1).copied());
        let (first, last) = (i == 0, i + 1 == chars.len());
        if first {
            if "#,[]{}&*!|>'\"%@`".contains(c) {
                (flow_ind, block_ind) = (true, true);
            }
            if c == '?' || c == ':' {
                flow_ind = true;
                block_ind |= followed_by_ws;
            }
            if c == '-' && followed_by_ws {
                (flow_ind, block_ind) = (true, true);
            }
        } else {
            if ",?[]{}".contains(c) {
                flow_ind = true;
            }
            if c == ':' {
                flow_ind = true;
                block_ind |= followed_by_ws;
            }
            if c == '#' && preceded_by_ws {
                (flow_ind, block_ind) = (true, true);
            }
        }
        if !super::emit::is_printable(c) && c != '\n' {
            special = true;
        }
        if c == ' ' {
            leading_space |= first;
            trailing_space |= last;
            break_space |= prev_break;
            (prev_space, prev_break) = (true, false);
        } else if matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}') {
            line_breaks = true;
            edge_break |= first || last;
            space_break |= prev_space;
            (prev_space, prev_break) = (false, true);
        } else {
            (prev_space, prev_break) = (false, false);
        }
        preceded_by_ws = is_blank(Some(c));
    }
    let edges = leading_space || trailing_space || edge_break;
    let mut a = Analysis {
        flow_plain: !(edges || line_breaks || flow_ind),
        block_plain: !(edges || line_breaks || block_ind),
        single_quoted: true,
    };
    if break_space || space_break || special {
        a.flow_plain = false;
        a.block_plain = false;
        a.single_quoted = false;
    }
    a
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
