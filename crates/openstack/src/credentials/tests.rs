use super::*;

const CLOUDS: &str = r#"
clouds:
  pw:
    auth:
      auth_url: https://keystone.example/v3
      username: alice
      password: s3cr3t-pass
      project_name: demo
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
    identity_api_version: 3
  ac:
    auth_type: v3applicationcredential
    auth:
      auth_url: https://keystone.example/v3
      application_credential_id: abc
      application_credential_secret: s3cr3t-appcred
  broken:
    auth:
      auth_url: https://keystone.example/v3
      username: bob
"#;

fn secret(yaml: &str, ca: Option<&[u8]>) -> BTreeMap<String, Vec<u8>> {
    let mut d = BTreeMap::new();
    d.insert(CLOUDS_YAML_KEY.into(), yaml.as_bytes().to_vec());
    if let Some(ca) = ca {
        d.insert(CACERT_KEY.into(), ca.to_vec());
    }
    d
}

#[test]
fn selects_cloud_and_region_override() {
    let data = secret(CLOUDS, None);
    let c = Credentials::from_secret("OpenStackCluster ns/c", "ns", "creds", &data, "pw", None)
        .unwrap();
    assert_eq!(c.method, AuthMethod::Password);
    assert_eq!(c.region.as_deref(), Some("RegionOne"));
    assert_eq!(c.interface(), "internal");
    let c = Credentials::from_secret("o", "ns", "creds", &data, "pw", Some("RegionTwo")).unwrap();
    assert_eq!(c.region.as_deref(), Some("RegionTwo"));
    let c = Credentials::from_secret("o", "ns", "creds", &data, "ac", None).unwrap();
    assert_eq!(c.method, AuthMethod::ApplicationCredential);
    assert_eq!(c.interface(), "public");
    let dbg = format!("{c:?}");
    assert!(!dbg.contains("s3cr3t"), "{dbg}");
}

#[test]
fn errors_name_object_secret_and_key_without_values() {
    let err = |data: &BTreeMap<String, Vec<u8>>, cloud: &str| {
        Credentials::from_secret("OpenStackCluster ns/c", "ns", "creds", data, cloud, None)
            .unwrap_err()
            .to_string()
    };
    let e = err(&BTreeMap::new(), "pw");
    assert!(
        e.contains("OpenStackCluster ns/c") && e.contains("ns/creds"),
        "{e}"
    );
    assert!(e.contains("\"clouds.yaml\" is missing"), "{e}");
    let e = err(&secret(CLOUDS, None), "nope");
    assert!(e.contains("no cloud \"nope\""), "{e}");
    let e = err(&secret(CLOUDS, None), "broken");
    assert!(e.contains("auth.password is missing"), "{e}");
    // A malformed document must not echo its content (it may hold a password).
    let e = err(&secret("clouds: [password: s3cr3t-pass", None), "pw");
    assert!(
        e.contains("not a valid clouds.yaml") && !e.contains("s3cr3t"),
        "{e}"
    );
    let e = err(&secret(CLOUDS, Some(b"not a pem")), "pw");
    assert!(e.contains("\"cacert\""), "{e}");
}

#[test]
fn cluster_identity_selector() {
    let ci = |sel: Option<LabelSelector>| ClusterIdentitySpec {
        secret_namespace: "capo-system".into(),
        secret_name: "cloud".into(),
        namespace_selector: sel,
    };
    let r = IdentityRef {
        kind: IdentityKind::ClusterIdentity,
        name: "shared".into(),
        cloud_name: "pw".into(),
        region: None,
    };
    let labels: BTreeMap<String, String> = [("tenant".to_string(), "a".to_string())].into();
    // Nil selector: denied by default, allowed only in upstream-compatibility mode.
    let e = secret_location("ns", &r, Some(&ci(None)), &labels, NilSelectorPolicy::Deny);
    assert!(matches!(e, Err(Error::IdentityNotAllowed(_))));
    let ok = secret_location(
        "ns",
        &r,
        Some(&ci(None)),
        &labels,
        NilSelectorPolicy::AllowAll,
    );
    assert_eq!(ok.unwrap(), ("capo-system".into(), "cloud".into()));
    // Empty selector matches all namespaces.
    let all = Some(LabelSelector::default());
    assert!(secret_location("ns", &r, Some(&ci(all)), &labels, NilSelectorPolicy::Deny).is_ok());
    // A selector that does not match.
    let sel = LabelSelector {
        match_labels: [("tenant".to_string(), "b".to_string())].into(),
        ..Default::default()
    };
    let e = secret_location(
        "ns",
        &r,
        Some(&ci(Some(sel))),
        &labels,
        NilSelectorPolicy::Deny,
    );
    assert!(matches!(e, Err(Error::IdentityNotAllowed(_))));
    // Missing identity object.
    assert!(secret_location("ns", &r, None, &labels, NilSelectorPolicy::Deny).is_err());
    // Plain Secret ref: the object's own namespace.
    let s = IdentityRef {
        kind: IdentityKind::Secret,
        ..r
    };
    assert_eq!(
        secret_location("ns", &s, None, &labels, NilSelectorPolicy::Deny).unwrap(),
        ("ns".into(), "shared".into())
    );
}

#[test]
fn endpoint_type_wins_over_interface_and_names_in_any_spelling_are_read() {
    let entry = |keys: &str| {
        format!(
            "clouds:\n  c:\n    auth:\n      auth_url: https://k/v3\n      username: u\n      password: p\n      user_domain_name: Default\n{keys}"
        )
    };
    let interface = |keys: &str| {
        Credentials::from_clouds_yaml(&entry(keys), "c", None, None).map(|c| c.interface())
    };
    // Neither key: public, as every OpenStack client.
    assert_eq!(interface("").unwrap(), "public");
    // openstacksdk's key alone, and upstream CAPO's alone.
    assert_eq!(interface("    interface: internal\n").unwrap(), "internal");
    assert_eq!(
        interface("    endpoint_type: internal\n").unwrap(),
        "internal"
    );
    // Both set: endpoint_type wins (gophercloud's clientconfig, which upstream reads it with).
    assert_eq!(
        interface("    interface: public\n    endpoint_type: internalURL\n").unwrap(),
        "internal"
    );
    assert_eq!(
        interface("    interface: internal\n    endpoint_type: public\n").unwrap(),
        "public"
    );
    // The Keystone v2 `...URL` names and any case.
    for (value, want) in [
        ("publicURL", "public"),
        ("internalURL", "internal"),
        ("adminURL", "admin"),
        ("admin", "admin"),
        ("Internal", "internal"),
    ] {
        assert_eq!(
            interface(&format!("    endpoint_type: {value}\n")).unwrap(),
            want
        );
    }
    // A value that names no interface is refused with the key named, never read as public.
    let e = interface("    endpoint_type: intenal\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("endpoint_type \"intenal\" is not an endpoint interface"),
        "{e}"
    );
    let e = interface("    interface: private\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("interface \"private\""), "{e}");
}

#[test]
fn endpoint_type_changes_the_digest() {
    let yaml = |keys: &str| {
        format!(
            "clouds:\n  c:\n    auth:\n      auth_url: https://k/v3\n      username: u\n      password: p\n      user_domain_name: Default\n{keys}"
        )
    };
    let digest = |keys: &str| {
        Credentials::from_clouds_yaml(&yaml(keys), "c", None, None)
            .unwrap()
            .digest()
    };
    assert_ne!(digest(""), digest("    endpoint_type: internal\n"));
    assert_ne!(
        digest("    interface: internal\n"),
        digest("    endpoint_type: internal\n")
    );
}
