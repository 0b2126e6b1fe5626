use super::*;

#[test]
fn create_server_shape() {
    let spec = ServerCreate {
        name: "m1".into(),
        flavor_id: "f1".into(),
        image_id: Some("img".into()),
        port_ids: vec!["p1".into(), "p2".into()],
        key_name: Some("k".into()),
        availability_zone: Some("az1".into()),
        user_data: Some(UserData::new("#cloud-config\npassword: hunter2\n")),
        tags: vec!["capo-cluster=uid".into()],
        scheduler_hints: [("group".to_string(), json!("sg1"))].into(),
        ..Default::default()
    };
    let r = create_server_request(&spec);
    assert_eq!(r.method, Method::POST);
    assert_eq!(r.path, "servers");
    assert_eq!(r.label, "server_create");
    assert_eq!(r.microversion, Some(TAGS_MICROVERSION));
    let b = r.body.clone().unwrap();
    assert_eq!(
        b["server"]["networks"],
        json!([{"port": "p1"}, {"port": "p2"}])
    );
    assert_eq!(b["server"]["imageRef"], "img");
    assert_eq!(b["server"]["tags"], json!(["capo-cluster=uid"]));
    assert_eq!(b["os:scheduler_hints"]["group"], "sg1");
    assert_eq!(
        b["server"]["user_data"],
        "I2Nsb3VkLWNvbmZpZwpwYXNzd29yZDogaHVudGVyMgo="
    );
    // Neither the spec nor the request print user data.
    for dbg in [format!("{spec:?}"), format!("{r:?}")] {
        assert!(
            !dbg.contains("hunter2") && !dbg.contains("I2Nsb3Vk"),
            "{dbg}"
        );
    }
    let plain = create_server_request(&ServerCreate {
        name: "m2".into(),
        ..Default::default()
    });
    assert_eq!(plain.microversion, Some(BASE_MICROVERSION));
    assert!(plain.body.unwrap()["server"].get("tags").is_none());
}

#[test]
fn list_and_misc_shapes() {
    let r = list_servers_request(Some("^m1$"), &TagFilter::all(&["a"]));
    assert_eq!(r.path, "servers/detail");
    assert_eq!(
        r.query,
        vec![("name".into(), "^m1$".into()), ("tags".into(), "a".into())]
    );
    assert_eq!(delete_server_request("x").method, Method::DELETE);
    assert_eq!(get_keypair_request("k").path, "os-keypairs/k");
    assert_eq!(
        create_keypair_request("k", "ssh-ed25519 AAA").body.unwrap()["keypair"]["public_key"],
        "ssh-ed25519 AAA"
    );
    assert_eq!(
        list_availability_zones_request().path,
        "os-availability-zone"
    );
    assert_eq!(
        list_volume_attachments_request("s").path,
        "servers/s/os-volume_attachments"
    );
    assert_eq!(list_interfaces_request("s").path, "servers/s/os-interface");
    assert_eq!(list_flavors_request().path, "flavors/detail");
    assert_eq!(list_server_groups_request().label, "server_group_list");
}

#[test]
fn server_reply_decodes() {
    let s: Server = serde_json::from_value(json!({
        "id": "i", "name": "m1", "status": "ERROR",
        "addresses": {"net": [{"addr": "10.0.0.3", "version": 4, "OS-EXT-IPS:type": "fixed"}]},
        "fault": {"code": 500, "message": "No valid host was found."},
        "OS-EXT-AZ:availability_zone": "az1", "tags": ["t"]
    }))
    .unwrap();
    assert_eq!(s.fault.unwrap().message, "No valid host was found.");
    assert_eq!(s.addresses["net"][0].ip_type.as_deref(), Some("fixed"));
}
