//! `clusterctl`-style variable substitution for cluster templates.
//!
//! Supports `${VAR}`, `${VAR:=default}` and `${VAR%suffix-pattern}` (only `.*`, i.e. strip the
//! last dot-separated part, the one form the upstream templates use), and the `$${...}` escape
//! that leaves a literal `${...}` behind.

use std::collections::BTreeMap;

/// Substitutes variables in `text`. Unknown variables without a default are reported.
pub fn envsubst(text: &str, vars: &BTreeMap<&str, &str>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut missing = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find("${") {
        let escaped = rest[..pos].ends_with('$');
        out.push_str(&rest[..pos]);
        let Some(end) = rest[pos..].find('}') else {
            out.push_str(&rest[pos..]);
            rest = "";
            break;
        };
        let expr = &rest[pos + 2..pos + end];
        if escaped {
            // `$${X}`: drop the extra `$` already copied and keep `${X}` literally.
            out.pop();
            out.push_str(&rest[pos..=pos + end]);
        } else {
            match expand(expr, vars) {
                Some(value) => out.push_str(&value),
                None => missing.push(expr.to_owned()),
            }
        }
        rest = &rest[pos + end + 1..];
    }
    out.push_str(rest);
    if missing.is_empty() {
        Ok(out)
    } else {
        Err(format!("undefined variables: {}", missing.join(", ")))
    }
}

fn expand(expr: &str, vars: &BTreeMap<&str, &str>) -> Option<String> {
    if let Some((name, default)) = expr.split_once(":=") {
        return Some(vars.get(name).map_or(default, |v| *v).to_owned());
    }
    if let Some((name, pattern)) = expr.split_once('%') {
        let value = vars.get(name)?;
        return Some(match pattern {
            ".*" => value
                .rsplit_once('.')
                .map_or(*value, |(head, _)| head)
                .to_owned(),
            _ => (*value).to_owned(),
        });
    }
    vars.get(expr).map(|v| (*v).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_all_forms() {
        let vars = BTreeMap::from([("A", "x"), ("V", "v1.34.3")]);
        let got = envsubst("${A}-${B:=d}-${V%.*}-$${KEEP}", &vars);
        assert_eq!(got.as_deref(), Ok("x-d-v1.34-${KEEP}"));
    }

    #[test]
    fn reports_missing() {
        let vars = BTreeMap::new();
        assert_eq!(
            envsubst("a ${X} b", &vars),
            Err("undefined variables: X".to_owned())
        );
    }
}
