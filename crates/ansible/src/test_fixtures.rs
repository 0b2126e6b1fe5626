//! Facts shared by the unit tests: every variable known, 3 control planes, 2 workers, bastion.

use crate::{BastionFacts, ClusterFacts, HostFacts, Role};
use capo_api::extensions::{
    OpenStackEndpoints, ReservedResources, ServiceEndpoints, reserved_for_flavor,
};

pub(crate) fn host(name: &str, role: Role, private: &str) -> HostFacts {
    HostFacts {
        name: name.into(),
        role,
        private_ip: Some(private.into()),
        public_ip: None,
        keepalived_interface: None,
        reserved: Some(reserved_for_flavor(4, 8192)),
    }
}

pub(crate) fn full() -> ClusterFacts {
    let mut cp0 = host("demo-cp-0", Role::ControlPlane, "10.6.0.10");
    cp0.keepalived_interface = Some("ens3".into());
    cp0.reserved = Some(ReservedResources {
        kube_cpu_reserved: Some("250m".into()),
        ..reserved_for_flavor(2, 4096)
    });
    ClusterFacts {
        kube_network_plugin: Some("cilium".into()),
        flannel_interface: Some("eth1".into()),
        cilium_project_id: Some("7a1c2b3d4e5f".into()),
        cilium_default_subnet_id: Some("subnet-1".into()),
        cilium_security_group_ids: Some(vec!["sg-b".into(), "sg-a".into(), "sg-b".into()]),
        vpc_cni_webhook_enable: Some(true),
        control_plane_vip: Some("10.6.0.5".into()),
        ingress_requested: true,
        ingress_vip: Some("10.6.0.6".into()),
        openstack: OpenStackEndpoints {
            mgmt: Some("cloud.example.com".into()),
            hosts: ServiceEndpoints {
                keystone: Some("keystone.example.com".into()),
                nova: Some("nova.example.com".into()),
                neutron: Some("neutron.example.com".into()),
                cinder: Some("cinder.example.com".into()),
            },
            project: Some("demo-project".into()),
            project_domain: Some("Default".into()),
            region: Some("RegionOne".into()),
            app_credential: None,
        },
        ntp_server: Some("10.6.0.2".into()),
        management_vip: Some("203.0.113.5".into()),
        ssh_user: "ubuntu".into(),
        bastion: Some(BastionFacts {
            address: "203.0.113.5".into(),
            user: "ubuntu".into(),
        }),
        hosts: vec![
            host("demo-md-1", Role::Worker, "10.6.0.21"),
            host("demo-cp-2", Role::ControlPlane, "10.6.0.12"),
            cp0,
            host("demo-md-0", Role::Worker, "10.6.0.20"),
            host("demo-cp-1", Role::ControlPlane, "10.6.0.11"),
        ],
    }
}
