//! The state of one OpenStackCluster reconcile: the object, its status being built, and the
//! status last written (so a step writes only when something changed).

use capo_api::constants::{condition_reasons, condition_types};
use capo_api::v1beta1::{OpenStackCluster, OpenStackClusterStatus};
use capo_cloud::Owner;
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use crate::conditions::{self, State};
use crate::context::Context;
use crate::error::{Error, Result};

/// One reconcile's view of an OpenStackCluster.
pub(super) struct Scope<'a> {
    pub ctx: &'a Context,
    pub osc: &'a OpenStackCluster,
    pub api: Api<OpenStackCluster>,
    pub owner: Owner,
    /// Status being built.
    pub status: OpenStackClusterStatus,
    written: OpenStackClusterStatus,
    /// Condition type of the step under way (where a failure is reported).
    pub step: &'static str,
}

impl<'a> Scope<'a> {
    pub fn new(ctx: &'a Context, osc: &'a OpenStackCluster) -> Self {
        let ns = osc.namespace().unwrap_or_default();
        let status = osc.status.clone().unwrap_or_default();
        ctx.index_cluster(&ns, &super::extensions::cluster_name(osc), &osc.name_any());
        Self {
            ctx,
            osc,
            api: Api::namespaced(ctx.client.clone(), &ns),
            owner: Owner {
                uid: crate::runtime::owner_id(osc),
                namespace: ns,
                name: osc.name_any(),
                spec_tags: osc.spec.tags.clone(),
            },
            written: status.clone(),
            status,
            step: condition_types::READY,
        }
    }

    /// The OpenStack session of the cluster's identityRef.
    pub async fn session(&self) -> Result<capo_openstack::Session> {
        let object = format!(
            "OpenStackCluster {}/{}",
            self.owner.namespace, self.owner.name
        );
        crate::credentials::session_for(
            self.ctx,
            &object,
            &self.owner.namespace,
            &self.osc.spec.identity_ref,
        )
        .await
    }

    /// Key of this object in the context's memo tables.
    pub fn key(&self) -> String {
        self.owner.uid.clone()
    }

    /// Set a condition.
    pub fn set(&mut self, type_: &str, state: State) {
        conditions::set(&mut self.status.conditions, type_, state);
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

    /// Report `err` on the current step's condition and on Ready, write status and emit a
    /// Warning event; returns the error for the backoff.
    pub async fn fail(&mut self, err: Error) -> Error {
        if err.is_conflict() {
            return err;
        }
        let reason = match &err {
            Error::InvalidSpec(_) => "InvalidSpec",
            Error::Credentials(_) => "InvalidCredentials",
            _ => condition_reasons::OPENSTACK_ERROR,
        };
        let message = err.to_string();
        let step = self.step;
        if step != condition_types::READY {
            self.set(step, State::error(reason, message.clone()));
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
            .publish(self.osc, type_, reason, action, note)
            .await;
    }
}
