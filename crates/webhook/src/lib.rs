//! Validating admission webhooks for every capo kind, the conversion webhook between
//! `v1beta1` and `v1beta2`, and the HTTPS server that serves them.
//!
//! The rules themselves live in [`capo_api::validation`] (pure functions, unit-tested there);
//! this crate only turns an `AdmissionReview` into a call of
//! [`Validate::validate_create`](capo_api::validation::Validate::validate_create) or
//! [`validate_update`](capo_api::validation::Validate::validate_update) and the verdict back
//! into a review, in the format the API server uses for its own field errors (reason `Invalid`,
//! one cause per field, the field paths in the message).
//!
//! The URL paths and webhook names are upstream CAPO v0.14's ([`WEBHOOKS`]), so an existing
//! `ValidatingWebhookConfiguration` keeps working when the controllers are swapped. Both
//! `admission.k8s.io/v1` and `v1beta1` reviews are answered (upstream registers `v1beta1`).
//!
//! [`serve`] runs the HTTPS server (rustls with the ring provider) on the certificate pair
//! `tls.crt`/`tls.key` of a directory, reloading it when cert-manager rotates the files;
//! [`router`] is the same HTTP application without TLS, for tests.

mod admission;
mod conversion;
mod kinds;
mod metrics;
mod review;
mod server;
mod status;

pub use admission::TOPOLOGY_DRY_RUN_ANNOTATION;
/// Errors of the server, and the certificate file names it reads.
pub use capo_tls::{CERT_FILE, Error, KEY_FILE, Result};
pub use conversion::{
    CONVERSION_PATH, CONVERSION_V1, CONVERSION_V1BETA1, ConversionRequest, ConversionResponse,
    ConversionResult, ConversionReview,
};
pub use kinds::{WEBHOOKS, Webhook};
pub use metrics::ConversionMetrics;
pub use review::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, GroupVersionKind, Status, StatusCause,
    StatusDetails,
};
pub use server::{
    DEFAULT_CERT_DIR, DEFAULT_PORT, WebhookServer, WebhookServerConfig, router, router_with, serve,
};
