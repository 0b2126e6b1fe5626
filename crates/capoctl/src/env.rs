//! `capoctl env`: the variables upstream's `templates/env.rc` exports for `clusterctl`, computed
//! without yq.
//!
//! `OPENSTACK_CLOUD_YAML_B64` is the selected entry, cut out of the file, under `clouds.<name>`
//! as yq prints it, with `auth.password` set to the effective password (the entry's, else
//! `$OS_PASSWORD`). env.rc sets it with yq's `env()`, which re-reads the password as YAML: a
//! password that survives that unchanged (the normal case) is written exactly as upstream writes
//! it; one that would not (leading/trailing spaces, `a: b`, `*x`, `~`, ...) is written as a
//! double-quoted string, where upstream corrupts it or fails.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::cloud_conf::{self, Flavor};
use crate::clouds::Cloud;
use crate::error::{Error, Result};
use crate::yaml::cut::{self, Edit};
use crate::yaml::{self, Ctx, Node, Style};

/// Where env.rc points the CCM at the CA bundle it ships as `OPENSTACK_CLOUD_CACERT_B64`.
const CA_FILE_IN_CLUSTER: &str = "/etc/certs/cacert";

/// The exported variables, in env.rc's order.
#[derive(Clone, PartialEq, Eq)]
pub struct EnvVars {
    /// `(name, value)` pairs.
    pub vars: Vec<(&'static str, String)>,
}

// The values embed the password (base64 is not encryption): never print them in Debug.
impl std::fmt::Debug for EnvVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.vars.iter().map(|(k, _)| *k).collect();
        write!(f, "EnvVars({names:?})")
    }
}

/// Compute the variables. `os_password` is `$OS_PASSWORD`, used when the entry has none.
pub fn compute(cloud: &Cloud, os_password: Option<&str>) -> Result<EnvVars> {
    let password = cloud
        .field(&["auth", "password"])
        .or_else(|| os_password.map(str::to_string))
        .filter(|p| !p.is_empty() && p != "null");
    let cacert = cloud.field(&["cacert"]);
    let conf = cloud_conf::render(
        cloud,
        Flavor::EnvRc,
        &cloud_conf::Options {
            password: password.as_deref(),
            ca_file: cacert.as_ref().map(|_| CA_FILE_IN_CLUSTER),
        },
    )?;
    let cacert_bytes = match &cacert {
        // env.rc reads the path relative to the working directory, as `cat` does.
        Some(path) => std::fs::read(path).map_err(|source| Error::Read {
            path: path.into(),
            source,
        })?,
        // `echo "" | base64`: a lone newline.
        None => b"\n".to_vec(),
    };
    let yaml = selected_cloud_yaml(cloud, password.as_deref())?;
    Ok(EnvVars {
        vars: vec![
            ("OPENSTACK_CLOUD", cloud.name.clone()),
            ("OPENSTACK_CLOUD_YAML_B64", STANDARD.encode(yaml)),
            ("OPENSTACK_CLOUD_PROVIDER_CONF_B64", STANDARD.encode(conf)),
            ("OPENSTACK_CLOUD_CACERT_B64", STANDARD.encode(cacert_bytes)),
        ],
    })
}

/// The entry alone under `clouds.<name>`, password set, as yq emits it: the entry's text cut
/// from the file and re-indented.
pub fn selected_cloud_yaml(cloud: &Cloud, password: Option<&str>) -> Result<String> {
    let problem = |field: String, problem| Error::Field {
        path: cloud.path.clone(),
        field,
        problem,
    };
    let doc = &cloud.doc;
    if !cut::stands_alone(doc, &cloud.key, &cloud.entry) {
        return Err(problem(
            format!("clouds.{}", cloud.name),
            "uses an anchor defined outside it (inline the values)",
        ));
    }
    let edit = match password {
        Some(pw) => Some(password_edit(cloud, pw).map_err(|(f, p)| problem(f, p))?),
        None => None,
    };
    let name = yaml::render_string(&cloud.name, Style::Plain, Ctx::Key);
    let entry = cut::cut(doc, &cloud.key, &cloud.entry, 4, Some(&name), edit.as_ref());
    Ok(format!("clouds:\n{entry}"))
}

/// yq's `.auth.password = strenv(PASSWORD)`: the new value keeps the replaced one's quote style
/// (a plain or new one is written plain when that reads back as the same string); `auth` and
/// `password` are added at the end when missing.
fn password_edit(cloud: &Cloud, pw: &str) -> Result<Edit, (String, &'static str)> {
    let ctx = |map: &Node| if map.is_flow() { Ctx::Flow } else { Ctx::Block };
    let value = |style, map| yaml::render_string(pw, style, ctx(map));
    let auth_field = || format!("clouds.{}.auth", cloud.name);
    let Some((auth_key, auth)) = cloud.entry.own("auth") else {
        let pw = value(Style::Plain, &cloud.entry);
        let lines = vec!["auth:".into(), format!("  password: {pw}")];
        let flow = cut::insert_in_flow(&cloud.entry, &format!("auth: {{password: {pw}}}"));
        return Ok(flow.unwrap_or(Edit::Append(cloud.key.pos.line, lines)));
    };
    if !matches!(auth, Node::Map { .. }) {
        return Err((auth_field(), "is not a mapping"));
    }
    match auth.own("password") {
        Some((key, Node::Scalar(old))) => Ok(cut::replace_value(
            &cloud.doc,
            key,
            old,
            value(old.style, auth),
        )),
        Some(_) => Err((format!("{}.password", auth_field()), "is not a scalar")),
        None => {
            let entry = format!("password: {}", value(Style::Plain, auth));
            Ok(cut::insert_in_flow(auth, &entry)
                .unwrap_or_else(|| Edit::Append(auth_key.pos.line, vec![entry])))
        }
    }
}

/// Output syntax for the variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `export NAME=value` lines for `eval` or `source`.
    Shell,
    /// `NAME=value` lines (a docker compose style .env file).
    Dotenv,
    /// A JSON object.
    Json,
}

/// Render the variables in `format`.
pub fn format(vars: &EnvVars, format: Format) -> String {
    match format {
        Format::Shell => vars
            .vars
            .iter()
            .map(|(k, v)| format!("export {k}={}\n", shell_quote(v)))
            .collect(),
        Format::Dotenv => vars
            .vars
            .iter()
            .map(|(k, v)| format!("{k}={}\n", dotenv_quote(v)))
            .collect(),
        Format::Json => {
            let map: serde_json::Map<String, serde_json::Value> = vars
                .vars
                .iter()
                .map(|(k, v)| ((*k).to_string(), serde_json::Value::String(v.clone())))
                .collect();
            let mut s = serde_json::Value::Object(map).to_string();
            s.push('\n');
            s
        }
    }
}

fn is_bare_safe(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.,:/+=@%".contains(c))
}

/// POSIX single quotes; a `'` becomes `'\''`.
fn shell_quote(v: &str) -> String {
    if is_bare_safe(v) {
        v.to_string()
    } else {
        format!("'{}'", v.replace('\'', "'\\''"))
    }
}

/// Double quotes with `\`, `"`, `$` and `` ` `` escaped (dotenv parsers expand `$` inside them).
fn dotenv_quote(v: &str) -> String {
    if is_bare_safe(v) {
        return v.to_string();
    }
    let mut out = String::from("\"");
    for c in v.chars() {
        match c {
            '\\' | '"' | '$' | '`' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;
    use crate::clouds::select;
    use std::path::Path;

    fn yaml_for(doc: &str, pw: Option<&str>) -> String {
        let cloud = select(doc, Path::new("c.yaml"), "c").unwrap();
        selected_cloud_yaml(&cloud, pw).unwrap()
    }

    #[test]
    fn password_keeps_the_old_quote_style() {
        let doc = "clouds:\n  c:\n    auth:\n      password: 'old'\n";
        let want = "clouds:\n  c:\n    auth:\n      password: 'it''s'\n";
        assert_eq!(yaml_for(doc, Some("it's")), want);
    }

    #[test]
    fn plain_password_is_quoted_only_when_needed() {
        let doc = "clouds:\n  c:\n    auth:\n      password: old\n";
        let pw = |p| yaml_for(doc, Some(p)).lines().last().unwrap().to_string();
        assert_eq!(pw("n#w"), "      password: n#w");
        assert_eq!(pw("12345"), "      password: \"12345\"");
        assert_eq!(pw(" a: b"), "      password: ' a: b'");
        assert_eq!(pw("~"), "      password: \"~\"");
    }

    #[test]
    fn missing_auth_and_password_are_appended() {
        let doc = "clouds:\n  c:\n    region_name: R\n";
        assert_eq!(
            yaml_for(doc, Some("pw")),
            "clouds:\n  c:\n    region_name: R\n    auth:\n      password: pw\n"
        );
    }

    #[test]
    fn odd_cloud_names_are_quoted_keys() {
        let doc = |name: &str| format!("clouds:\n  '{name}':\n    auth: {{}}\n");
        let first_key = |name: &str| {
            let c = select(&doc(name), Path::new("c.yaml"), name).unwrap();
            selected_cloud_yaml(&c, None)
                .unwrap()
                .lines()
                .nth(1)
                .unwrap()
                .to_string()
        };
        assert_eq!(first_key("my-cloud"), "  my-cloud:");
        assert_eq!(first_key("123"), "  \"123\":");
        assert_eq!(first_key("a: b"), "  'a: b':");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("abc=="), "abc==");
        assert_eq!(dotenv_quote("a $b"), "\"a \\$b\"");
    }

    #[test]
    fn debug_hides_values() {
        let v = EnvVars {
            vars: vec![("OPENSTACK_CLOUD_YAML_B64", "c2VjcmV0".into())],
        };
        assert!(!format!("{v:?}").contains("c2VjcmV0"));
    }
}
