//! The state of one OpenStackServer reconcile: the object, its status being built, and the
//! status last written (so a step writes only when something changed).

use capo_api::constants::{condition_reasons, condition_types};
use capo_api::v1alpha1::{OpenStackServer, OpenStackServerStatus};
use capo_cloud::instance::ServerOwner;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use super::cache::LookupCache;
use super::hold::Holds;
use crate::conditions::{self, State};
use crate::context::Context;
use crate::error::{Error, Result};

/// One reconcile's view of an OpenStackServer.
pub(super) struct Scope<'a> {
    pub ctx: &'a Context,
    pub cache: &'a LookupCache,
    /// Slow-retry holds of the controller.
    pub holds: &'a Holds,
    pub oss: &'a OpenStackServer,
    pub api: Api<OpenStackServer>,
    pub owner: ServerOwner,
    pub namespace: String,
    /// Status being built.
    pub status: OpenStackServerStatus,
    written: OpenStackServerStatus,
}

impl<'a> Scope<'a> {
    pub fn new(
        ctx: &'a Context,
        cache: &'a LookupCache,
        holds: &'a Holds,
        oss: &'a OpenStackServer,
    ) -> Self {
        let ns = oss.namespace().unwrap_or_default();
        let status = oss.status.clone().unwrap_or_default();
        Self {
            ctx,
            cache,
            holds,
            oss,
            api: Api::namespaced(ctx.client.clone(), &ns),
            owner: ServerOwner {
                // The first UID, kept in an annotation: after `clusterctl move` (new UID) the
                // server's resources are still recognised as ours.
                uid: crate::runtime::owner_id(oss),
                name: oss.name_any(),
                spec_tags: oss.spec.tags.clone(),
            },
            namespace: ns,
            written: status.clone(),
            status,
        }
    }

    /// Key of this object in the context's memo tables.
    pub fn key(&self) -> String {
        format!("{}/server", self.owner.uid)
    }

    /// `OpenStackServer ns/name`, for messages.
    pub fn object(&self) -> String {
        format!("OpenStackServer {}/{}", self.namespace, self.owner.name)
    }

    /// Set a condition.
    pub fn set(&mut self, type_: &str, state: State) {
        conditions::set(&mut self.status.conditions, type_, state);
    }

    /// Set InstanceReady and Ready to the same state.
    pub fn set_instance(&mut self, state: State) {
        self.set(condition_types::INSTANCE_READY, state.clone());
        self.set(condition_types::READY, state);
    }

    /// Write status if it changed since the last write.
    pub async fn flush(&mut self) -> Result<()> {
        if self.status == self.written {
            return Ok(());
        }
        crate::status::apply_status(&self.api, &self.owner.name, &self.status).await?;
        self.written = self.status.clone();
        Ok(())
    }

    /// Report `err` on InstanceReady (while the server is not ready) and Ready, write status
    /// and emit a Warning event; returns the error for the backoff.
    pub async fn fail(&mut self, err: Error) -> Error {
        if err.is_conflict() {
            return err;
        }
        let reason = match &err {
            Error::InvalidSpec(_) | Error::Cloud(capo_cloud::Error::InvalidSpec(_)) => {
                condition_reasons::INVALID_MACHINE_SPEC
            }
            Error::Cloud(capo_cloud::Error::NotFound { .. }) if !self.status.ready => {
                condition_reasons::INVALID_MACHINE_SPEC
            }
            Error::Credentials(_) => "InvalidCredentials",
            _ if !self.status.ready => condition_reasons::INSTANCE_CREATE_FAILED,
            _ => condition_reasons::OPENSTACK_ERROR,
        };
        if err.is_slow_retry() || err.is_terminal() {
            // The status write below wakes the object at once; the retry must still wait.
            self.holds.hold(&self.key(), self.ctx.options.slow_retry);
        }
        let message = err.to_string();
        if !self.status.ready {
            self.set(
                condition_types::INSTANCE_READY,
                State::error(reason, message.clone()),
            );
        }
        self.set(
            condition_types::READY,
            State::error(reason, message.clone()),
        );
        if let Err(e) = self.flush().await {
            tracing::warn!(error = %e, "could not record the failure in status");
        }
        self.event(EventType::Warning, reason, "Reconcile", Some(message))
            .await;
        err
    }

    /// Publish an event about this object (failures to publish are logged, never fatal).
    pub async fn event(&self, type_: EventType, reason: &str, action: &str, note: Option<String>) {
        self.ctx
            .publish(self.oss, type_, reason, action, note)
            .await;
    }
}
