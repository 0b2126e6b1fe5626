//! OpenStackMachine controller tests against a real kube-apiserver and capo-sim, in one test binary
//! (one link, one kube-apiserver for all of them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/machines.rs"]
mod machines;

mod abandon;
mod address_pairs;
mod bad_input;
mod economy;
mod faults;
mod inputs;
mod lifecycle;
mod primary_subnet;
mod scale;
mod soft_delete;
mod three_plus_two;
