//! Go duration strings (`time.ParseDuration`), as upstream's flags take them: `10m`, `30s`,
//! `1h30m`, `1.5h`, `250ms`, `0`.

use std::time::Duration;

/// Units Go accepts, longest suffix first so `ms` is not read as `m` + `s`.
const UNITS: [(&str, f64); 8] = [
    ("ns", 1e-9),
    ("us", 1e-6),
    ("µs", 1e-6),
    ("μs", 1e-6),
    ("ms", 1e-3),
    ("s", 1.0),
    ("m", 60.0),
    ("h", 3600.0),
];

/// Parse a Go duration. Negative durations are rejected: no flag of the manager takes one.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let s = text;
    let bad = |why: &str| format!("invalid duration {text:?}: {why}");
    if s.is_empty() {
        return Err(bad("empty"));
    }
    if s.starts_with('-') {
        return Err(bad("negative"));
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    // Go accepts a bare "0" without unit, and nothing else without a unit.
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = s;
    let mut seconds = 0.0_f64;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| bad("missing unit"))?;
        let (num, after) = rest.split_at(num_len);
        if num.is_empty() || num == "." {
            return Err(bad("expected a number"));
        }
        let value: f64 = num.parse().map_err(|_| bad("malformed number"))?;
        let (unit, scale) = UNITS
            .iter()
            .filter(|(u, _)| after.starts_with(u))
            .max_by_key(|(u, _)| u.len())
            .ok_or_else(|| bad("unknown unit (use ns, us, ms, s, m, h)"))?;
        seconds += value * scale;
        rest = &after[unit.len()..];
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| bad("out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Duration {
        parse_go_duration(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn accepts_what_go_accepts() {
        assert_eq!(ok("10m"), Duration::from_secs(600));
        assert_eq!(ok("30s"), Duration::from_secs(30));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("1h30m"), Duration::from_secs(5400));
        assert_eq!(ok("1.5h"), Duration::from_secs(5400));
        assert_eq!(ok("250ms"), Duration::from_millis(250));
        assert_eq!(ok("2m3s"), Duration::from_secs(123));
        assert_eq!(ok("10us"), Duration::from_micros(10));
        assert_eq!(ok("10µs"), Duration::from_micros(10));
        assert_eq!(ok("7ns"), Duration::from_nanos(7));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok("+5s"), Duration::from_secs(5));
        assert_eq!(ok(".5s"), Duration::from_millis(500));
    }

    #[test]
    fn rejects_what_go_rejects() {
        for s in [
            "", "10", "1x", "m", "-1s", "1..5s", "s10", "1h ", " 1h", ".",
        ] {
            assert!(parse_go_duration(s).is_err(), "{s:?} accepted");
        }
    }
}
