//! AdmissionReview in, AdmissionReview out, through the real router (no TLS).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::review::AdmissionReview;
use crate::{TOPOLOGY_DRY_RUN_ANNOTATION, router};

const GROUP: &str = "infrastructure.cluster.x-k8s.io";
const SG_ID: &str = "7f8e1d2c-3b4a-4c5d-9e6f-0a1b2c3d4e5f";

fn path(version: &str, kind: &str) -> String {
    format!(
        "/validate-infrastructure-cluster-x-k8s-io-{version}-{}",
        kind.to_lowercase()
    )
}

fn object(version: &str, kind: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{version}"),
        "kind": kind,
        "metadata": {"name": "obj", "namespace": "ns"},
        "spec": spec,
    })
}

fn machine_spec() -> Value {
    json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}})
}

struct Call<'a> {
    review_version: &'a str,
    version: &'a str,
    kind: &'a str,
    operation: &'a str,
    object: Option<Value>,
    old: Option<Value>,
    dry_run: Option<bool>,
}

impl<'a> Call<'a> {
    fn new(version: &'a str, kind: &'a str, operation: &'a str) -> Self {
        Self {
            review_version: "admission.k8s.io/v1",
            version,
            kind,
            operation,
            object: None,
            old: None,
            dry_run: None,
        }
    }

    fn body(&self) -> Value {
        let mut request = json!({
            "uid": "0df28fbd-5f5f-11e8-bc74-36e6bb280816",
            "kind": {"group": GROUP, "version": self.version, "kind": self.kind},
            "resource": {"group": GROUP, "version": self.version, "resource": "x"},
            "name": "obj",
            "namespace": "ns",
            "operation": self.operation,
            "userInfo": {"username": "admin"},
        });
        for (key, value) in [("object", &self.object), ("oldObject", &self.old)] {
            if let Some(v) = value {
                request[key] = v.clone();
            }
        }
        if let Some(dry_run) = self.dry_run {
            request["dryRun"] = json!(dry_run);
        }
        json!({"apiVersion": self.review_version, "kind": "AdmissionReview", "request": request})
    }

    async fn send(&self) -> (StatusCode, Value) {
        let body = self.body().to_string();
        send_raw(&path(self.version, self.kind), body).await
    }

    /// The parsed response review; panics on a non-200 answer.
    async fn review(&self) -> AdmissionReview {
        let (status, body) = self.send().await;
        assert_eq!(status, StatusCode::OK, "{body}");
        match serde_json::from_value(body) {
            Ok(review) => review,
            Err(e) => panic!("response is not an AdmissionReview: {e}"),
        }
    }
}

async fn send_raw(uri: &str, body: String) -> (StatusCode, Value) {
    let request = Request::post(uri)
        .header("content-type", "application/json")
        .body(Body::from(body));
    let Ok(request) = request else {
        panic!("bad test request")
    };
    let Ok(response) = router().oneshot(request).await;
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await;
    let bytes = bytes.map(|b| b.to_vec()).unwrap_or_default();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

/// `(allowed, code, reason, causes as (field, type), message)` of a response.
fn verdict(review: &AdmissionReview) -> (bool, u16, String, Vec<(String, String)>, String) {
    let Some(response) = &review.response else {
        panic!("review without response")
    };
    let status = response.status.clone().unwrap_or_default();
    let causes = status
        .details
        .map(|d| d.causes)
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.field, c.reason))
        .collect();
    (
        response.allowed,
        status.code,
        status.reason,
        causes,
        status.message,
    )
}

#[tokio::test]
async fn valid_create_is_allowed_and_echoes_uid_and_version() {
    for review_version in ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"] {
        let mut call = Call::new("v1beta1", "OpenStackMachine", "CREATE");
        call.review_version = review_version;
        call.object = Some(object("v1beta1", "OpenStackMachine", machine_spec()));
        let review = call.review().await;
        assert_eq!(review.api_version, review_version);
        assert_eq!(review.kind, "AdmissionReview");
        let response = review.response.unwrap_or_default();
        assert_eq!(response.uid, "0df28fbd-5f5f-11e8-bc74-36e6bb280816");
        assert!(response.allowed);
        assert_eq!(response.status, None);
    }
}

#[tokio::test]
async fn invalid_create_is_denied_with_field_causes() {
    let mut call = Call::new("v1beta1", "OpenStackMachine", "CREATE");
    let spec = json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}},
        "ports": [{"disablePortSecurity": true, "securityGroups": [{"id": SG_ID}]}]});
    call.object = Some(object("v1beta1", "OpenStackMachine", spec));
    let (allowed, code, reason, causes, message) = verdict(&call.review().await);
    assert!(!allowed);
    assert_eq!((code, reason.as_str()), (422, "Invalid"));
    assert_eq!(
        causes,
        vec![(
            "spec.ports[0].securityGroups".to_owned(),
            "FieldValueForbidden".to_owned()
        )]
    );
    assert_eq!(
        message,
        "OpenStackMachine.infrastructure.cluster.x-k8s.io \"obj\" is invalid: \
         spec.ports[0].securityGroups: Forbidden: cannot have security groups when disablePortSecurity is true"
    );
}

#[tokio::test]
async fn server_port_contradicting_its_legacy_port_security_is_denied() {
    let spec = |port: Value| {
        let mut spec = machine_spec();
        spec["identityRef"] = json!({"name": "c", "cloudName": "openstack"});
        spec["sshKeyName"] = json!("k");
        spec["ports"] = json!([port]);
        object("v1alpha1", "OpenStackServer", spec)
    };
    let mut call = Call::new("v1alpha1", "OpenStackServer", "CREATE");
    // A server stored by v0.14 (legacy field only) is fine, and so is agreement.
    for port in [
        json!({"disablePortSecurity": true}),
        json!({"enablePortSecurity": false, "disablePortSecurity": true}),
    ] {
        call.object = Some(spec(port));
        assert!(verdict(&call.review().await).0);
    }
    call.object = Some(spec(
        json!({"enablePortSecurity": false, "disablePortSecurity": false}),
    ));
    let (allowed, code, _, causes, message) = verdict(&call.review().await);
    assert!(!allowed);
    assert_eq!(code, 422);
    assert_eq!(
        causes,
        vec![(
            "spec.ports[0].enablePortSecurity".to_owned(),
            "FieldValueInvalid".to_owned()
        )]
    );
    assert!(
        message.contains(
            "spec.ports[0].enablePortSecurity: Invalid value: \"false\": contradicts the \
             deprecated disablePortSecurity: false"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn update_checks_immutability() {
    let mut call = Call::new("v1beta1", "OpenStackMachine", "UPDATE");
    call.old = Some(object("v1beta1", "OpenStackMachine", machine_spec()));
    let mut changed = machine_spec();
    changed["flavor"] = json!("m1.large");
    call.object = Some(object("v1beta1", "OpenStackMachine", changed));
    let (allowed, _, _, causes, _) = verdict(&call.review().await);
    assert!(!allowed);
    assert_eq!(
        causes,
        vec![("spec.flavor".to_owned(), "FieldValueInvalid".to_owned())]
    );
}

fn template(spec: Value, annotated: bool) -> Value {
    let mut t = object(
        "v1beta1",
        "OpenStackMachineTemplate",
        json!({"template": {"spec": spec}}),
    );
    if annotated {
        t["metadata"]["annotations"] = json!({TOPOLOGY_DRY_RUN_ANNOTATION: ""});
    }
    t
}

#[tokio::test]
async fn topology_dry_run_needs_both_the_flag_and_the_annotation() {
    let mut changed = machine_spec();
    changed["flavor"] = json!("m1.large");
    for (dry_run, annotated, allowed) in [
        (Some(true), true, true),
        (Some(true), false, false),
        (None, true, false),
        (Some(false), true, false),
    ] {
        let mut call = Call::new("v1beta1", "OpenStackMachineTemplate", "UPDATE");
        call.old = Some(template(machine_spec(), false));
        call.object = Some(template(changed.clone(), annotated));
        call.dry_run = dry_run;
        let (got, _, _, causes, _) = verdict(&call.review().await);
        assert_eq!(got, allowed, "dryRun {dry_run:?}, annotated {annotated}");
        if !allowed {
            let immutable = (
                "spec.template.spec.flavor".to_owned(),
                "FieldValueInvalid".to_owned(),
            );
            assert_eq!(causes, vec![immutable]);
        }
    }
}

fn pool(ips: &[&str], max: i64) -> Value {
    let spec = json!({"identityRef": {"type": "Secret", "name": "c", "cloudName": "openstack"},
        "reclaimPolicy": "Delete", "preAllocatedFloatingIPs": ips, "maxIPs": max});
    object("v1alpha1", "OpenStackFloatingIPPool", spec)
}

#[tokio::test]
async fn updates_ratchet_errors_the_stored_object_already_had() {
    let mut call = Call::new("v1alpha1", "OpenStackFloatingIPPool", "UPDATE");
    call.old = Some(pool(&["x"], 5));
    call.object = Some(pool(&["x"], 6));
    let (allowed, ..) = verdict(&call.review().await);
    assert!(
        allowed,
        "an error the stored object had does not block other changes"
    );
    call.object = Some(pool(&["x", "y"], 6));
    let (allowed, _, _, causes, _) = verdict(&call.review().await);
    assert!(!allowed);
    assert_eq!(
        causes,
        vec![(
            "spec.preAllocatedFloatingIPs[1]".to_owned(),
            "FieldValueInvalid".to_owned()
        )]
    );
    let mut create = Call::new("v1alpha1", "OpenStackFloatingIPPool", "CREATE");
    create.object = Some(pool(&["x"], 5));
    assert!(!verdict(&create.review().await).0);
}

#[tokio::test]
async fn undecodable_object_is_a_bad_request_naming_kind_and_field() {
    let mut call = Call::new("v1beta1", "OpenStackCluster", "CREATE");
    call.object = Some(object(
        "v1beta1",
        "OpenStackCluster",
        json!({"identityRef": {"cloudName": "openstack", "name": "c"}, "tags": "not-a-list"}),
    ));
    let (allowed, code, reason, _, message) = verdict(&call.review().await);
    assert!(!allowed);
    assert_eq!((code, reason.as_str()), (400, "BadRequest"));
    assert!(
        message.starts_with(
            "cannot decode object as OpenStackCluster.infrastructure.cluster.x-k8s.io \"obj\": spec.tags: invalid type"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn wrong_kind_missing_object_and_other_operations() {
    let mut wrong = Call::new("v1beta1", "OpenStackMachine", "CREATE");
    wrong.object = Some(object("v1beta1", "OpenStackMachine", machine_spec()));
    let body = wrong.body();
    let mut body = body;
    body["request"]["kind"]["kind"] = json!("OpenStackCluster");
    let uri = path("v1beta1", "OpenStackMachine");
    let (status, value) = send_raw(&uri, body.to_string()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(value["response"]["allowed"], json!(false));
    assert_eq!(value["response"]["status"]["code"], json!(400));

    let missing = Call::new("v1alpha1", "OpenStackServer", "UPDATE");
    let (allowed, code, _, _, message) = verdict(&missing.review().await);
    assert!(!allowed && code == 400, "{message}");
    assert!(message.contains("OpenStackServer"), "{message}");

    let delete = Call::new("v1alpha1", "OpenStackClusterIdentity", "DELETE");
    assert!(verdict(&delete.review().await).0);
}

#[tokio::test]
async fn malformed_reviews_and_unknown_paths_are_http_errors() {
    let uri = path("v1beta1", "OpenStackCluster");
    let (status, _) = send_raw(&uri, "{not json".to_owned()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let other = json!({"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview"});
    let (status, body) = send_raw(&uri, other.to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body.as_str().unwrap_or_default().contains("unsupported"));
    let no_request = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
    let (status, _) = send_raw(&uri, no_request.to_string()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = send_raw("/validate-nothing", "{}".to_owned()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn update_of_an_undecodable_stored_object_gets_the_create_rules() {
    let mut broken = object("v1beta1", "OpenStackMachine", machine_spec());
    broken["spec"]["ports"] = json!("not-a-list");
    let mut call = Call::new("v1beta1", "OpenStackMachine", "UPDATE");
    call.old = Some(broken);
    call.object = Some(object("v1beta1", "OpenStackMachine", machine_spec()));
    assert!(
        verdict(&call.review().await).0,
        "a valid new object may replace it"
    );
    let spec = json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}},
        "ports": [{"disablePortSecurity": true, "securityGroups": [{"id": SG_ID}]}]});
    call.object = Some(object("v1beta1", "OpenStackMachine", spec));
    let (allowed, code, _, causes, _) = verdict(&call.review().await);
    assert!(!allowed);
    assert_eq!(code, 422);
    let field = (
        "spec.ports[0].securityGroups".to_owned(),
        "FieldValueForbidden".to_owned(),
    );
    assert_eq!(causes, vec![field]);
}
