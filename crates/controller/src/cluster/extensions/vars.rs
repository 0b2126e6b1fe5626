//! `status.extensions`: the values of the contract's variables, derived from the cluster's
//! status, its session (token project, catalog) and the extension spec. No requests: the
//! session's token already carries the project and the catalog.

use capo_api::extensions::{
    AddressStatus, CiliumStatus, LOAD_BALANCER_MODE_OCTAVIA, ManagementStatus, NetworkingStatus,
    NtpStatus, OpenStackEndpoints, PlatformStatus, ServiceEndpoints, VipStatus,
};
use capo_openstack::Session;

use super::super::scope::Scope;
use super::shared::spec;
use crate::error::Result;

/// Fill `status.extensions` (keeps the VIP, SSH and Ansible entries other steps wrote).
pub(super) async fn fill_status(scope: &mut Scope<'_>, s: &Session) -> Result<()> {
    let Some(ext_spec) = spec(scope.obj).cloned() else {
        return Ok(());
    };
    let token = capo_cloud::identity::token_scope(s).await?;
    let hosts = &token.endpoint_hosts;
    // The token names the project's domain whatever authenticated it (an application
    // credential's clouds.yaml names none); clouds.yaml is the fallback for a token without it.
    let creds = s.credentials();
    let project_domain = token
        .project_domain_name
        .clone()
        .or_else(|| creds.entry.auth.project_domain_name.clone())
        .or_else(|| creds.entry.auth.project_domain_id.clone())
        .or_else(|| creds.entry.auth.user_domain_name.clone());
    let st = &scope.status;
    let pod_network = st
        .extensions
        .as_ref()
        .and_then(|e| e.networking.as_ref())
        .and_then(|n| n.pod_network.clone());
    let managed_groups: Vec<String> = [&st.control_plane_security_group, &st.worker_security_group]
        .into_iter()
        .flatten()
        .map(|g| g.id.clone())
        .collect();
    // With Cilium the pods get their own subnet and allow-all group, and the consumer keeps
    // only the first group: nothing is published until the pod network exists, so Cilium is
    // never pointed at the nodes' subnet or groups.
    let (subnet, security_groups): (Option<String>, Vec<String>) = if ext_spec.cilium() {
        match &pod_network {
            Some(p) => (
                Some(p.subnet_id.clone()),
                std::iter::once(p.security_group_id.clone())
                    .chain(managed_groups)
                    .collect(),
            ),
            None => (None, Vec::new()),
        }
    } else {
        let subnet = (st.network.as_ref())
            .and_then(|n| capo_cloud::networking::node_subnet(&scope.obj.spec, n))
            .map(|sn| sn.id.clone());
        (subnet, managed_groups)
    };
    let bastion_fixed = st.bastion.as_ref().and_then(|b| b.ip.clone());
    let bastion_public = st
        .bastion
        .as_ref()
        .and_then(|b| b.floating_ip.clone().or(b.ip.clone()));
    // The bastion serves time to the cluster network (its user data, and a UDP 123 rule on its
    // group, come with the extension when no server is named).
    let ntp = capo_ansible::ntp_server(&ext_spec, bastion_fixed);
    let octavia_cp = (!scope.obj.spec.keepalived_control_plane())
        .then(|| st.api_server_load_balancer.clone())
        .flatten()
        .map(|l| VipStatus {
            mode: Some(LOAD_BALANCER_MODE_OCTAVIA.to_owned()),
            vip: Some(l.internal_ip).filter(|v| !v.is_empty()),
            port_id: None,
            load_balancer_id: Some(l.id),
            floating_ip: Some(l.ip).filter(|v| !v.is_empty()),
            floating_ip_id: None,
        });
    let ext = scope.status.extensions.get_or_insert_with(Default::default);
    ext.networking = Some(NetworkingStatus {
        cilium: Some(CiliumStatus {
            project_id: Some(token.project_id),
            default_subnet_id: subnet,
            security_group_ids: security_groups,
            webhook_enable: Some(capo_ansible::webhook_enable(&ext_spec)),
        }),
        pod_network,
    });
    if let Some(cp) = octavia_cp {
        ext.load_balancers
            .get_or_insert_with(Default::default)
            .control_plane = Some(cp);
    }
    // Harbor is served through the ingress: one address, published at the peer's path too.
    if let Some(lbs) = ext.load_balancers.as_mut() {
        lbs.harbor = lbs
            .ingress
            .as_ref()
            .and_then(|i| i.vip.clone())
            .map(|vip| AddressStatus { vip: Some(vip) });
    }
    // One set of endpoint hosts, at the seed's path (`openStack.*`) and the consumers'
    // (`endpoints.*`).
    let endpoints = ServiceEndpoints {
        keystone: hosts.get("identity").or(hosts.get("auth")).cloned(),
        nova: hosts.get("compute").cloned(),
        neutron: hosts.get("network").cloned(),
        cinder: hosts
            .get("volumev3")
            .or(hosts.get("block-storage"))
            .or(hosts.get("volume"))
            .cloned(),
    };
    let app_credential = ext
        .open_stack
        .as_ref()
        .and_then(|o| o.app_credential.clone());
    ext.open_stack = Some(OpenStackEndpoints {
        mgmt: hosts.get("auth").cloned(),
        hosts: endpoints.clone(),
        project: token.project_name,
        project_domain,
        region: token.region,
        app_credential,
    });
    ext.endpoints = Some(endpoints);
    ext.platform = Some(PlatformStatus {
        ntp: Some(NtpStatus { server: Some(ntp) }),
        management: bastion_public.map(|vip| ManagementStatus { vip: Some(vip) }),
    });
    Ok(())
}
