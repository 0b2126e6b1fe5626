//! OpenStackServer controller tests against a real kube-apiserver and capo-sim, in one test binary
//! (one link, one kube-apiserver for all of them).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/machines.rs"]
mod machines;

mod after_move;
mod bastion;
mod devices;
mod faults;
mod floating_ip_pool;
mod legacy;
mod pool_abandon;
mod pool_ip;
