//! The cluster's SSH key pair (when `spec.extensions.ssh.generateKeyPair`): generated once into
//! the `kubernetes.io/ssh-auth` Secret `<cluster>-ssh` (owned by the OpenStackCluster), its
//! public key imported as the Nova key pair `k8s-clusterapi-cluster-<ns>-<name>`, which
//! machines naming no key pair use. The private key never leaves the Secret.
//!
//! The Ansible bootstrap provider logs in with the Secret `<cluster>-ssh-auth` and creates it
//! (an RSA key) when it is absent. One key serves both: when `<cluster>-ssh-auth` came first
//! its key is adopted into `<cluster>-ssh` (so the Nova key pair is the consumer's key);
//! otherwise capo's key is copied into a new `<cluster>-ssh-auth`. Neither is ever
//! overwritten.

use std::collections::BTreeMap;

use capo_ansible::{SSH_AUTH_PRIVATE_KEY, SSH_PUBLIC_KEY, SshKeyPair, generate_ed25519};
use capo_api::extensions::SshStatus;
use capo_api::names::{
    bastion_user_data_secret_name, ssh_auth_secret_name, ssh_keypair_name, ssh_secret_name,
};
use capo_openstack::Session;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Resource};

use super::super::scope::Scope;
use super::shared::{apply_owned_secret, secret_labels, spec};
use crate::error::{Error, KubeContext, Result};

/// Secret type of the key pair.
pub const SSH_AUTH_TYPE: &str = "kubernetes.io/ssh-auth";

fn wanted(scope: &Scope<'_>) -> bool {
    spec(scope.obj)
        .and_then(|e| e.ssh.as_ref())
        .is_some_and(|s| s.generate_key_pair == Some(true))
}

/// Ensure the Secret (generate once) and the Nova key pair; record both names in status.
pub(super) async fn reconcile_ssh(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    if !wanted(scope) {
        return Ok(());
    }
    let name = ssh_secret_name(&scope.owner.name);
    let auth_name = ssh_auth_secret_name(&scope.owner.name);
    let api: Api<Secret> = Api::namespaced(scope.ctx.shared.client.clone(), &scope.owner.namespace);
    let ours = api
        .get_opt(&name)
        .await
        .kctx(|| format!("get Secret {name}"))?;
    let theirs = api
        .get_opt(&auth_name)
        .await
        .kctx(|| format!("get Secret {auth_name}"))?;
    let public = match (&ours, &theirs) {
        (Some(existing), _) => public_key_of(existing, &name)?,
        (None, Some(consumers)) => {
            let pair = key_pair_of(consumers, &auth_name)?;
            create_secret(scope, &api, &name, &pair).await?
        }
        (None, None) => {
            let comment = format!("{}/{}", scope.owner.namespace, scope.owner.name);
            let pair = generate_ed25519(&comment)
                .map_err(|e| Error::InvalidSpec(format!("generate SSH key: {e}")))?;
            create_secret(scope, &api, &name, &pair).await?
        }
    };
    if theirs.is_none() {
        // Read back, not the pair generated above: after a lost create race the stored key
        // is the other reconcile's.
        let source = api.get(&name).await.kctx(|| format!("get Secret {name}"))?;
        create_secret(scope, &api, &auth_name, &key_pair_of(&source, &name)?).await?;
    }
    let keypair = ssh_keypair_name(&scope.owner.namespace, &scope.owner.name);
    capo_cloud::compute::ensure_keypair(s, &keypair, &public).await?;
    let user_data = BTreeMap::from([(
        "value".to_owned(),
        ByteString(bastion_user_data(&public, &ntp_clients(scope)).into_bytes()),
    )]);
    let ud_name = bastion_user_data_secret_name(&scope.owner.name);
    let current = api
        .get_opt(&ud_name)
        .await
        .kctx(|| format!("get Secret {ud_name}"))?;
    if current.and_then(|c| c.data) != Some(user_data.clone()) {
        apply_owned_secret(scope, &api, &ud_name, user_data).await?;
    }
    let ext = scope.status.extensions.get_or_insert_with(Default::default);
    ext.ssh = Some(SshStatus {
        key_pair_name: Some(keypair),
        secret_name: Some(name),
    });
    Ok(())
}

fn public_key_of(secret: &Secret, name: &str) -> Result<String> {
    let data = secret.data.clone().unwrap_or_default();
    if let Some(p) = data.get(SSH_PUBLIC_KEY) {
        return String::from_utf8(p.0.clone()).map_err(|_| {
            Error::InvalidSpec(format!("Secret {name}: key {SSH_PUBLIC_KEY} is not UTF-8"))
        });
    }
    // A Secret someone else wrote with only the private key: derive the public key.
    Ok(key_pair_of(secret, name)?.public_openssh)
}

/// The key pair of an ssh-auth Secret's private key (OpenSSH or PKCS#1 RSA); the text read
/// is zeroed when dropped, and errors never quote it.
fn key_pair_of(secret: &Secret, name: &str) -> Result<SshKeyPair> {
    let private = secret
        .data
        .as_ref()
        .and_then(|d| d.get(SSH_AUTH_PRIVATE_KEY))
        .and_then(|p| String::from_utf8(p.0.clone()).ok())
        .map(zeroize::Zeroizing::new)
        .ok_or_else(|| {
            Error::InvalidSpec(format!("Secret {name} has no {SSH_AUTH_PRIVATE_KEY}"))
        })?;
    SshKeyPair::from_private_any(&private)
        .map_err(|e| Error::InvalidSpec(format!("Secret {name}: {e}")))
}

/// Create the ssh-auth Secret `name` holding `pair`; returns the public key of what is stored
/// (another reconcile's key when it won the race).
async fn create_secret(
    scope: &Scope<'_>,
    api: &Api<Secret>,
    name: &str,
    pair: &SshKeyPair,
) -> Result<String> {
    let data = BTreeMap::from([
        (
            SSH_AUTH_PRIVATE_KEY.to_owned(),
            ByteString(pair.private_openssh.as_bytes().to_vec()),
        ),
        (
            SSH_PUBLIC_KEY.to_owned(),
            ByteString(pair.public_openssh.as_bytes().to_vec()),
        ),
    ]);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(scope.owner.namespace.clone()),
            labels: Some(secret_labels(scope.obj)),
            owner_references: scope.obj.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        type_: Some(SSH_AUTH_TYPE.to_owned()),
        data: Some(data),
        ..Default::default()
    };
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(pair.public_openssh.clone()),
        // Another reconcile won the race: use its key.
        Err(kube::Error::Api(ae)) if ae.code == 409 => {
            let existing = api.get(name).await.kctx(|| format!("get Secret {name}"))?;
            public_key_of(&existing, name)
        }
        Err(e) => Err(Error::kube(format!("create Secret {name}"), e)),
    }
}

/// The cluster network's subnets, which the bastion serves time to when it is the published
/// `ntp_server` (none otherwise).
fn ntp_clients(scope: &Scope<'_>) -> Vec<String> {
    if !capo_cloud::plan::security_groups::bastion_serves_ntp(&scope.obj.spec) {
        return Vec::new();
    }
    let subnets = scope.status.network.iter().flat_map(|n| &n.subnets);
    subnets.map(|sn| sn.cidr.clone()).collect()
}

/// cloud-init for the bastion: the Ansible providers log in as `root` with the cluster's key
/// and jump through the bastion (`ssh -J`), so root login by key and TCP forwarding are on.
/// With `ntp_clients`, chrony also serves time to those networks (the bastion is then the
/// published `ntp_server`; Debian/Ubuntu and RHEL configuration paths both). The key is
/// public; the user data holds no secret.
pub(super) fn bastion_user_data(public_key: &str, ntp_clients: &[String]) -> String {
    let mut doc = format!(
        "#cloud-config
# Written by capo for the Ansible bootstrap and control-plane providers.
disable_root: false
ssh_authorized_keys:
  - {}
write_files:
  - path: /etc/ssh/sshd_config.d/60-capo-ansible.conf
    permissions: \"0644\"
    content: |
      PermitRootLogin prohibit-password
      AllowTcpForwarding yes
",
        public_key.trim()
    );
    if !ntp_clients.is_empty() {
        doc.push_str("packages:\n  - chrony\n");
    }
    doc.push_str(
        "runcmd:
  - [sh, -c, \"systemctl reload ssh || systemctl reload sshd || true\"]
",
    );
    if !ntp_clients.is_empty() {
        let allow: String = ntp_clients
            .iter()
            .map(|c| format!("allow {c}\\n"))
            .collect();
        doc.push_str(&format!(
            "  - [sh, -c, \"for f in /etc/chrony/chrony.conf /etc/chrony.conf; do [ -f $f ] && ! grep -q '^# capo ntp' $f && printf '# capo ntp: serve the cluster network\\n{allow}' >> $f; done; systemctl restart chrony || systemctl restart chronyd || true\"]
"
        ));
    }
    doc
}

/// Delete the Nova key pair and the Secret.
pub(super) async fn cleanup(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    let keypair = ssh_keypair_name(&scope.owner.namespace, &scope.owner.name);
    let recorded = scope
        .status
        .extensions
        .as_ref()
        .and_then(|e| e.ssh.as_ref())
        .is_some();
    if recorded || wanted(scope) {
        capo_cloud::compute::delete_keypair(s, &keypair).await?;
    }
    delete_secret(scope, &ssh_auth_secret_name(&scope.owner.name)).await?;
    delete_secret(scope, &bastion_user_data_secret_name(&scope.owner.name)).await?;
    delete_secret(scope, &ssh_secret_name(&scope.owner.name)).await
}

/// Delete a Secret this cluster owns (absent is success; a Secret the user made is left).
/// Explicit, because the owner reference alone needs the garbage collector, which the
/// controller must not depend on (and the cluster's machines may outlive it briefly).
pub(super) async fn delete_secret(scope: &Scope<'_>, name: &str) -> Result<()> {
    let api: Api<Secret> = Api::namespaced(scope.ctx.shared.client.clone(), &scope.owner.namespace);
    let Some(existing) = api
        .get_opt(name)
        .await
        .kctx(|| format!("get Secret {name}"))?
    else {
        return Ok(());
    };
    let uid = scope.obj.meta().uid.clone().unwrap_or_default();
    let owned = existing
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.uid == uid || r.kind == "OpenStackCluster" && r.name == scope.owner.name);
    if !owned {
        tracing::info!(secret = %name, "Secret not created by this cluster; left in place");
        return Ok(());
    }
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(ae)) if ae.code == 404 => Ok(()),
        Err(e) => Err(Error::kube(format!("delete Secret {name}"), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::bastion_user_data;

    fn runcmd(doc: &str) -> Vec<String> {
        let v: yaml_serde::Value = yaml_serde::from_str(doc).expect("user data is YAML");
        v["runcmd"]
            .as_sequence()
            .expect("runcmd")
            .iter()
            .map(|c| c[2].as_str().expect("sh -c command").to_owned())
            .collect()
    }

    #[test]
    fn bastion_serves_time_to_the_cluster_network_only_when_asked() {
        let plain = bastion_user_data("ssh-ed25519 AAAA k", &[]);
        assert!(plain.starts_with("#cloud-config\n"));
        assert!(!plain.contains("chrony"), "{plain}");
        assert_eq!(runcmd(&plain).len(), 1);

        let clients = ["10.4.0.0/24".to_owned(), "fd00:4::/64".to_owned()];
        let ntp = bastion_user_data("ssh-ed25519 AAAA k", &clients);
        let v: yaml_serde::Value = yaml_serde::from_str(&ntp).expect("YAML");
        assert_eq!(v["packages"][0].as_str(), Some("chrony"));
        assert_eq!(
            v["ssh_authorized_keys"][0].as_str(),
            Some("ssh-ed25519 AAAA k")
        );
        let cmds = runcmd(&ntp);
        let chrony = &cmds[1];
        // One `allow` line per network, appended once (the marker line guards a rerun).
        assert!(
            chrony.contains(
                "printf '# capo ntp: serve the cluster network\nallow 10.4.0.0/24\nallow fd00:4::/64\n' >> $f"
            ),
            "{chrony}"
        );
        assert!(chrony.contains("/etc/chrony/chrony.conf /etc/chrony.conf"));
        assert!(chrony.contains("systemctl restart chrony || systemctl restart chronyd"));
    }
}
