//! `cloud.conf` for the external OpenStack cloud controller manager, line for line what
//! upstream's `templates/create_cloud_conf.sh` writes (and, with [`Flavor::EnvRc`], the variant
//! `templates/env.rc` base64-encodes into `OPENSTACK_CLOUD_PROVIDER_CONF_B64`).
//!
//! Values are written between double quotes without escaping, as upstream does, so the output is
//! byte-compatible; a value containing `"` is not representable that way by either tool.

use crate::clouds::Cloud;
use crate::error::{Error, Result};

/// Which upstream script's rules to follow; they differ in two details.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `create_cloud_conf.sh`: `domain_name` is consulted only when `user_domain_name` is absent
    /// or `null` (an empty value suppresses the line).
    CreateCloudConf,
    /// `env.rc`: `domain_name` is consulted when `user_domain_name` is empty too.
    EnvRc,
}

/// Inputs beyond the cloud entry.
#[derive(Debug, Clone, Default)]
pub struct Options<'a> {
    /// Password to write instead of the entry's (env.rc falls back to `$OS_PASSWORD`).
    pub password: Option<&'a str>,
    /// `ca-file=` value. env.rc writes `/etc/certs/cacert` when the entry has `cacert`;
    /// create_cloud_conf.sh only when given one.
    pub ca_file: Option<&'a str>,
}

/// Render the `[Global]` section.
pub fn render(cloud: &Cloud, flavor: Flavor, opts: &Options<'_>) -> Result<String> {
    let auth_url = cloud
        .field(&["auth", "auth_url"])
        .ok_or_else(|| Error::Field {
            path: cloud.path.clone(),
            field: cloud.field_name(&["auth", "auth_url"]),
            problem: "is missing",
        })?;
    let mut out = format!("[Global]\nauth-url={auth_url}\n");
    let mut line = |key: &str, value: Option<&str>| {
        if let Some(v) = value.filter(|v| !v.is_empty() && *v != "null") {
            out.push_str(&format!("{key}=\"{v}\"\n"));
        }
    };
    let password = opts
        .password
        .map(str::to_string)
        .or_else(|| cloud.field(&["auth", "password"]));
    line("username", cloud.field(&["auth", "username"]).as_deref());
    line("password", password.as_deref());
    line("tenant-id", cloud.field(&["auth", "project_id"]).as_deref());
    line(
        "tenant-name",
        cloud.field(&["auth", "project_name"]).as_deref(),
    );
    let domain_name = with_fallback(cloud, flavor, "user_domain_name", "domain_name");
    line("domain-name", Some(&domain_name));
    let domain_id = with_fallback(cloud, flavor, "user_domain_id", "domain_id");
    line("domain-id", Some(&domain_id));
    line("ca-file", opts.ca_file);
    line("region", cloud.field(&["region_name"]).as_deref());
    for (key, field) in [
        ("application-credential-name", "application_credential_name"),
        ("application-credential-id", "application_credential_id"),
        (
            "application-credential-secret",
            "application_credential_secret",
        ),
    ] {
        line(key, cloud.field(&["auth", field]).as_deref());
    }
    Ok(out)
}

/// The user-scoped domain field, else the generic one, under each script's rule.
fn with_fallback(cloud: &Cloud, flavor: Flavor, primary: &str, fallback: &str) -> String {
    let text = cloud.raw_field(&["auth", primary]);
    let fall_back = match flavor {
        Flavor::CreateCloudConf => text == "null",
        Flavor::EnvRc => text.is_empty() || text == "null",
    };
    if fall_back {
        cloud.raw_field(&["auth", fallback])
    } else {
        text
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // a failing test should panic
mod tests {
    use super::*;
    use crate::clouds::select;
    use std::path::Path;

    fn conf(doc: &str, flavor: Flavor) -> String {
        let cloud = select(doc, Path::new("c.yaml"), "c").unwrap();
        render(&cloud, flavor, &Options::default()).unwrap()
    }

    #[test]
    fn empty_user_domain_differs_between_scripts() {
        let doc = "clouds:\n  c:\n    auth:\n      auth_url: u\n      user_domain_name: ''\n      domain_name: D\n";
        assert_eq!(conf(doc, Flavor::CreateCloudConf), "[Global]\nauth-url=u\n");
        assert_eq!(
            conf(doc, Flavor::EnvRc),
            "[Global]\nauth-url=u\ndomain-name=\"D\"\n"
        );
    }

    #[test]
    fn missing_auth_url_is_an_error_naming_the_field() {
        let cloud = select(
            "clouds:\n  c:\n    auth: {password: x}\n",
            Path::new("c.yaml"),
            "c",
        );
        let err = render(&cloud.unwrap(), Flavor::EnvRc, &Options::default()).unwrap_err();
        assert_eq!(err.to_string(), "c.yaml: clouds.c.auth.auth_url is missing");
    }
}
