//! A floating IP pool whose identity Secret was force-deleted: its deletion stalls naming the
//! abandon annotation; annotated, it goes and its event lists the floating IPs left behind.
use std::time::Duration;

use crate::common::{Harness, poll};
use crate::floating_ip_pool::{address_of, apply_pool, claim, start_pool};
use capo_api::v1alpha1::OpenStackFloatingIPPool;
use capo_controller::abandon::ABANDON_ANNOTATION;
use capo_controller::conditions;
use k8s_openapi::api::core::v1::{Event, Secret};
use kube::Api;
use kube::api::{Patch, PatchParams};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_without_credentials_is_abandoned_with_its_annotation() {
    let mut h = Harness::new("pool-abandon").await;
    // The deleted Secret is noticed at once (reads are shared for 60 s by default).
    h.options.identity_read_max_age = Duration::from_millis(100);
    let _c = start_pool(&h);
    apply_pool(&h, "p", "reclaimPolicy: Delete\n").await;
    claim(&h, "c1", "p").await;
    let address = address_of(&h, "c1").await;
    let pools: Api<OpenStackFloatingIPPool> = Api::namespaced(h.client.clone(), &h.ns);
    // The address is in the pool's status before the credentials go.
    poll(
        30,
        || async {
            let p = pools.get("p").await.unwrap();
            let st = p.status?;
            st.claimed_ips.contains(&address).then_some(())
        },
        || async { format!("{address} never recorded as claimed") },
    )
    .await;
    let auth = |p: &OpenStackFloatingIPPool| {
        let st = p.status.as_ref()?;
        conditions::get(&st.conditions, "OpenStackAuthenticationSucceeded").cloned()
    };
    let c = auth(&pools.get("p").await.unwrap());
    assert_eq!(
        c.as_ref().map(|c| (c.status.as_str(), c.reason.as_str())),
        Some(("True", "Ready")),
        "{c:?}"
    );
    Api::<Secret>::namespaced(h.client.clone(), &h.ns)
        .delete("cloud-config", &Default::default())
        .await
        .unwrap();
    pools.delete("p", &Default::default()).await.unwrap();
    let want = format!(
        "annotate OpenStackFloatingIPPool {}/p with {ABANDON_ANNOTATION}=true",
        h.ns
    );
    let message = poll(
        30,
        || async {
            let p = pools.get_opt("p").await.unwrap()?;
            let c = conditions::get(&p.status?.conditions, "Ready")?.clone();
            c.message.contains(&want).then_some(c.message)
        },
        || async { format!("pool deletion never named {want}") },
    )
    .await;
    assert!(message.contains("cloud-config"), "{message}");
    let c = auth(&pools.get("p").await.unwrap()).expect("an authentication condition");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "OpenStackAuthenticationFailed"),
        "{c:?}"
    );
    assert!(
        c.message.contains("cloud-config") && c.message.contains("not found"),
        "{}",
        c.message
    );
    let patch = serde_json::json!({"metadata": {"annotations": {ABANDON_ANNOTATION: "true"}}});
    pools
        .patch("p", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    poll(
        30,
        || async { pools.get_opt("p").await.unwrap().is_none().then_some(()) },
        || async { "pool not abandoned".to_owned() },
    )
    .await;
    let events = Api::<Event>::namespaced(h.client.clone(), &h.ns);
    let note = poll(
        20,
        || async {
            events
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .find(|e| {
                    e.involved_object.name.as_deref() == Some("p")
                        && e.reason.as_deref() == Some("Abandoned")
                })
                .and_then(|e| e.message)
        },
        || async { "no Abandoned event".to_owned() },
    )
    .await;
    assert!(note.contains(&address), "{note}");
}
