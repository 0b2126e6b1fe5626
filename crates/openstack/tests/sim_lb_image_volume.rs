//! Octavia, Glance and Cinder calls against capo-sim.

mod common;

use capo_openstack::blockstorage::*;
use capo_openstack::image::{self, ImageFilter};
use capo_openstack::loadbalancer::{self as lb, *};
use capo_openstack::network::{
    self as net, NETWORK, Network, NetworkCreate, SUBNET, Subnet, SubnetCreate,
};

#[tokio::test]
async fn octavia_calls() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    let version = api_version(&s).await.unwrap();
    assert!(version >= TAGS_VERSION, "{version}");
    assert!(!list_providers(&s).await.unwrap().is_empty());
    let _flavors = list_flavors(&s).await.unwrap();

    let n: Network = net::create(
        &s,
        NETWORK,
        &NetworkCreate {
            name: "lbnet".into(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let sn: Subnet = net::create(
        &s,
        SUBNET,
        &SubnetCreate {
            name: "lbsub".into(),
            network_id: n.id.clone(),
            cidr: "10.8.0.0/24".into(),
            ip_version: 4,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let l: LoadBalancer = create(
        &s,
        LOAD_BALANCER,
        &LoadBalancerCreate {
            name: "kubeapi".into(),
            vip_subnet_id: Some(sn.id.clone()),
            tags: vec!["t".into()],
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(l.vip_address.is_some());
    let got: LoadBalancer = get(&s, LOAD_BALANCER, &l.id).await.unwrap();
    assert_eq!(got.name, "kubeapi");
    let listed: Vec<LoadBalancer> = lb::list(&s, LOAD_BALANCER, &ListFilter::by_name("kubeapi"))
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    // Children need the LB ACTIVE; the simulator may keep it PENDING_CREATE for a while.
    wait_active(&s, &l.id).await;
    let li: Listener = create(
        &s,
        LISTENER,
        &ListenerCreate {
            listener: ListenerBody {
                name: "kubeapi-6443".into(),
                protocol: "TCP".into(),
                protocol_port: 6443,
                ..Default::default()
            },
            loadbalancer_id: l.id.clone(),
        },
    )
    .await
    .unwrap();
    wait_active(&s, &l.id).await;
    let pool: Pool = create(
        &s,
        POOL,
        &PoolCreate {
            pool: PoolBody {
                name: "kubeapi-6443".into(),
                protocol: "TCP".into(),
                lb_algorithm: "ROUND_ROBIN".into(),
                healthmonitor: None,
            },
            listener_id: li.id.clone(),
        },
    )
    .await
    .unwrap();
    wait_active(&s, &l.id).await;
    let hm: HealthMonitor = create(
        &s,
        HEALTH_MONITOR,
        &HealthMonitorCreate {
            monitor: HealthMonitorBody {
                name: "kubeapi-6443".into(),
                monitor_type: "TCP".into(),
                delay: 10,
                timeout: 5,
                max_retries: 5,
                max_retries_down: 3,
            },
            pool_id: pool.id.clone(),
        },
    )
    .await
    .unwrap();
    wait_active(&s, &l.id).await;
    let m = create_member(
        &s,
        &pool.id,
        &MemberCreate {
            name: "kubeapi-6443-m1".into(),
            address: "10.8.0.10".into(),
            protocol_port: 6443,
            subnet_id: Some(sn.id.clone()),
        },
    )
    .await
    .unwrap();
    assert_eq!(list_members(&s, &pool.id).await.unwrap().len(), 1);
    wait_active(&s, &l.id).await;
    delete_member(&s, &pool.id, &m.id).await.unwrap();
    let _: HealthMonitor = get(&s, HEALTH_MONITOR, &hm.id).await.unwrap();
    wait_active(&s, &l.id).await;
    delete_load_balancer(&s, &l.id, true).await.unwrap();
    assert_eq!(env.metrics.requests("loadbalancer_version_get"), 1);
}

#[allow(clippy::unwrap_used)] // test helper: a failed GET should fail the test
async fn wait_active(s: &capo_openstack::Session, id: &str) {
    for _ in 0..200 {
        let l: LoadBalancer = get(s, LOAD_BALANCER, id).await.unwrap();
        if l.provisioning_status == "ACTIVE" {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("load balancer {id} never became ACTIVE");
}

#[tokio::test]
async fn glance_and_cinder_calls() {
    let env = common::env().await;
    let s = env.session("capo-sim");
    let images = image::list_images(&s, &ImageFilter::default())
        .await
        .unwrap();
    let first = images.first().expect("seeded image");
    let by_name = image::list_images(
        &s,
        &ImageFilter {
            name: first.name.clone(),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(by_name.len(), 1);
    let got = image::get_image(&s, &first.id).await.unwrap();
    assert_eq!(got.property("os_type"), Some("linux"));

    let types = list_volume_types(&s).await.unwrap();
    assert!(!types.is_empty());
    let azs = capo_openstack::blockstorage::list_availability_zones(&s)
        .await
        .unwrap();
    assert!(!azs.is_empty());
    let v = create_volume(
        &s,
        &VolumeCreate {
            name: "m1-root".into(),
            size: 10,
            volume_type: Some(types[0].name.clone()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(get_volume(&s, &v.id).await.unwrap().size, 10);
    assert_eq!(list_volumes(&s, Some("m1-root")).await.unwrap().len(), 1);
    for _ in 0..200 {
        if get_volume(&s, &v.id).await.unwrap().status == "available" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    delete_volume(&s, &v.id).await.unwrap();
}
