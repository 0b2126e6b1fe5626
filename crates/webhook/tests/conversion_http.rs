//! The `/convert` endpoint over HTTP (without TLS, through [`capo_webhook::router`]): what the
//! API server sends is answered with a ConversionReview carrying the request's uid; anything
//! else is a 400 naming what is wrong, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::body::Body;
use axum::http::{Request, StatusCode};
use capo_webhook::{CONVERSION_PATH, ConversionReview, router};
use serde_json::{Value, json};
use tower::ServiceExt;

async fn post(body: Vec<u8>) -> (StatusCode, Vec<u8>) {
    let request = Request::post(CONVERSION_PATH)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let response = router().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
        .await
        .unwrap();
    (status, bytes.to_vec())
}

fn machine(name: &str) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
        "kind": "OpenStackMachine",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}}
    })
}

#[tokio::test]
async fn a_review_as_the_api_server_sends_it_is_answered_with_its_uid() {
    for version in ["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"] {
        let review = json!({
            "kind": "ConversionReview", "apiVersion": version,
            "request": {"uid": "u-7", "desiredAPIVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                        "objects": [machine("a"), machine("b")]},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}}
        });
        let (status, body) = post(serde_json::to_vec(&review).unwrap()).await;
        assert_eq!(status, StatusCode::OK);
        let answer: ConversionReview = serde_json::from_slice(&body).unwrap();
        assert_eq!(answer.api_version, version);
        assert_eq!(answer.kind, "ConversionReview");
        let response = answer.response.unwrap();
        assert_eq!(response.uid, "u-7");
        assert_eq!(response.result.status, "Success");
        assert_eq!(response.converted_objects.len(), 2);
    }
}

#[tokio::test]
async fn malformed_reviews_are_400s_naming_the_problem() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"".to_vec(), "not a ConversionReview"),
        (b"{".to_vec(), "not a ConversionReview"),
        (b"\xff\xfe".to_vec(), "not a ConversionReview"),
        (b"[1,2]".to_vec(), "not a ConversionReview"),
        (
            serde_json::to_vec(&json!({"kind": "ConversionReview", "apiVersion": "v9"})).unwrap(),
            "unsupported ConversionReview version",
        ),
        (
            serde_json::to_vec(
                &json!({"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1"}),
            )
            .unwrap(),
            "without a request",
        ),
    ];
    for (body, expected) in cases {
        let (status, answer) = post(body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body:?}");
        let text = String::from_utf8_lossy(&answer);
        assert!(text.contains(expected), "{body:?}: {text}");
    }
}

#[tokio::test]
async fn junk_objects_fail_the_review_without_a_panic() {
    let junk = [
        json!(null),
        json!("text"),
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1"}),
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "OpenStackMachine",
               "spec": {"flavor": 12, "ports": "no"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "data": {"password": "c2VjcmV0"}}),
    ];
    for object in junk {
        let review = json!({
            "kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
            "request": {"uid": "u", "desiredAPIVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
                        "objects": [object.clone()]}
        });
        let (status, body) = post(serde_json::to_vec(&review).unwrap()).await;
        assert_eq!(status, StatusCode::OK, "{object}");
        let answer: ConversionReview = serde_json::from_slice(&body).unwrap();
        let response = answer.response.unwrap();
        assert_eq!(response.result.status, "Failure", "{object}");
        assert!(response.converted_objects.is_empty());
        // A message names the object and field; it never echoes data such as a Secret's.
        assert!(
            !response.result.message.contains("c2VjcmV0"),
            "{}",
            response.result.message
        );
    }
}
