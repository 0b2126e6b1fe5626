//! Which plain scalars YAML 1.2's core schema (as go-yaml v3 applies it) reads as strings.

/// True when a plain scalar with this text is a string, not null, bool, int, float or timestamp.
pub fn resolves_to_string(text: &str) -> bool {
    !(is_null(text) || is_bool(text) || is_int(text) || is_float(text) || is_timestamp(text))
}

fn is_null(t: &str) -> bool {
    matches!(t, "" | "~" | "null" | "Null" | "NULL")
}

fn is_bool(t: &str) -> bool {
    matches!(t, "true" | "True" | "TRUE" | "false" | "False" | "FALSE")
}

/// Go's `strconv.ParseInt(s, 0, 64)` after removing `_`: sign, then decimal, `0x`, `0o`, `0b` or
/// a leading-zero octal.
fn is_int(t: &str) -> bool {
    let s = t.replace('_', "");
    let s = s.strip_prefix(['+', '-']).unwrap_or(&s);
    let (digits, radix) = if let Some(r) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (r, 16)
    } else if let Some(r) = s.strip_prefix("0o").or(s.strip_prefix("0O")) {
        (r, 8)
    } else if let Some(r) = s.strip_prefix("0b").or(s.strip_prefix("0B")) {
        (r, 2)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix))
}

fn is_float(t: &str) -> bool {
    if matches!(t.trim_start_matches(['+', '-']), ".inf" | ".Inf" | ".INF")
        || matches!(t, ".nan" | ".NaN" | ".NAN")
    {
        return true;
    }
    let s = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int_part, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits = |x: &str| x.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = digits(int_part)
        && frac.is_none_or(digits)
        && (!int_part.is_empty() || frac.is_some_and(|f| !f.is_empty()));
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    // go-yaml's float pattern also matches bare digit strings such as `08`.
    mantissa_ok && exponent_ok
}

/// `YYYY-MM-DD`, optionally followed by a time (go-yaml resolves these to timestamps).
fn is_timestamp(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && (b.len() == 10 || matches!(b[10], b'T' | b't' | b' ' | b'\t'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::resolves_to_string;

    #[test]
    fn core_schema() {
        for s in [
            "12345",
            "0x1F",
            "1e3",
            "1.5",
            "-2",
            "true",
            "~",
            "null",
            "2001-01-01",
            ".inf",
        ] {
            assert!(!resolves_to_string(s), "{s}");
        }
        for s in ["p@ss", "abc", "1.2.3", "0xZZ", "e3", "yes", "12a"] {
            assert!(resolves_to_string(s), "{s}");
        }
    }
}
