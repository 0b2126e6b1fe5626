//! Every Nova call against capo-sim, plus the microversion discovery happening once.

mod common;

use capo_openstack::TagFilter;
use capo_openstack::compute::*;
use capo_openstack::network::{self as net, ListFilter, PORT, Port};
use capo_openstack::request::Service;

#[tokio::test]
async fn nova_calls() {
    let env = common::env().await;
    let s = env.session("capo-sim");

    let flavors = list_flavors(&s).await.unwrap();
    let flavor = flavors.first().expect("seeded flavor").clone();
    assert_eq!(get_flavor(&s, &flavor.id).await.unwrap().name, flavor.name);
    assert!(
        find_flavor_by_name(&s, &flavor.name)
            .await
            .unwrap()
            .is_some()
    );
    let azs = list_availability_zones(&s).await.unwrap();
    assert!(azs.iter().any(|z| z.state.available), "{azs:?}");
    let groups = list_server_groups(&s).await.unwrap();
    assert!(groups.is_empty() || !groups[0].id.is_empty());

    let kp = create_keypair(
        &s,
        "k1",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl test",
    )
    .await
    .unwrap();
    assert_eq!(get_keypair(&s, "k1").await.unwrap().name, kp.name);
    assert!(
        list_keypairs(&s)
            .await
            .unwrap()
            .iter()
            .any(|k| k.name == "k1")
    );

    let image = capo_openstack::image::list_images(&s, &Default::default())
        .await
        .unwrap()[0]
        .clone();
    let (_, p) = common::network_with_port(&s, "10.7.0.0/24", "m1-0").await;

    let spec = ServerCreate {
        name: "m1".into(),
        flavor_id: flavor.id.clone(),
        image_id: Some(image.id.clone()),
        port_ids: vec![p.id.clone()],
        key_name: Some("k1".into()),
        user_data: Some(UserData::new("#cloud-config\n")),
        tags: vec!["capo-cluster=u1".into()],
        ..Default::default()
    };
    let created = create_server(&s, &spec).await.unwrap();
    let got = get_server(&s, &created.id).await.unwrap();
    assert_eq!(got.name, "m1");
    let listed = list_servers(&s, Some("^m1$"), &TagFilter::default())
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let by_tag = list_servers(&s, None, &TagFilter::all(&["capo-cluster=u1"]))
        .await
        .unwrap();
    assert_eq!(by_tag.len(), 1);
    let itfs = list_interfaces(&s, &created.id).await.unwrap();
    assert_eq!(itfs.first().map(|i| i.port_id.clone()), Some(p.id.clone()));
    let atts = list_volume_attachments(&s, &created.id).await.unwrap();
    assert!(atts.is_empty());

    delete_server(&s, &created.id).await.unwrap();
    delete_keypair(&s, "k1").await.unwrap();
    assert!(get_keypair(&s, "k1").await.unwrap_err().is_not_found());

    // Microversion negotiated once per endpoint per session, not before every call.
    assert_eq!(env.metrics.requests("compute_version_get"), 1);
    assert!(s.versions(Service::Compute).await.unwrap().max >= TAGS_MICROVERSION);
    assert_eq!(env.metrics.requests("compute_version_get"), 1);
    assert_eq!(s.token_requests(), 1);
    let _ = net::list::<Port>(&s, PORT, &ListFilter::default())
        .await
        .unwrap();
}
