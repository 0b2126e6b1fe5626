//! CAPO v0.14-compatible API types.
//!
//! `v1beta1` and `v1alpha1` mirror the upstream Cluster API Provider OpenStack v0.14.7 CRDs
//! field for field; `extensions` adds the optional BA/ACP fields; `crds` renders the CRDs;
//! `names` and `constants` hold the naming rules and well-known strings shared by controllers.
//!
//! The CRDs in `config/crd/bases/` are generated from these types; after changing a type run
//! `cargo run -p capo-api --bin crdgen` (the `crd_drift` test fails until you do).

pub mod constants;
pub mod conversion;
pub mod crds;
pub mod decode;
pub mod extensions;
pub mod names;
pub mod schema;
pub mod v1alpha1;
pub mod v1beta1;
pub mod v1beta2;
pub mod validation;
