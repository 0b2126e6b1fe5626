//! The state of one OpenStackMachine reconcile: the object, its status being built, and the
//! status last written (so a step writes only when something changed).

use capo_api::constants::{condition_reasons, condition_types};
use capo_api::v1beta1::{OpenStackMachine, OpenStackMachineStatus};
use kube::runtime::events::EventType;
use kube::{Api, ResourceExt};

use crate::conditions::{self, State};
use crate::context::Context;
use crate::error::{Error, Result};

/// One reconcile's view of an OpenStackMachine.
pub(super) struct Scope<'a> {
    pub ctx: &'a Context,
    pub osm: &'a OpenStackMachine,
    pub api: Api<OpenStackMachine>,
    pub name: String,
    pub namespace: String,
    /// Status being built.
    pub status: OpenStackMachineStatus,
    written: OpenStackMachineStatus,
    /// Condition type of the step under way (where a failure is reported besides Ready).
    pub step: &'static str,
}

impl<'a> Scope<'a> {
    pub fn new(ctx: &'a Context, osm: &'a OpenStackMachine) -> Self {
        let ns = osm.namespace().unwrap_or_default();
        let status = osm.status.clone().unwrap_or_default();
        Self {
            ctx,
            osm,
            api: Api::namespaced(ctx.client.clone(), &ns),
            name: osm.name_any(),
            namespace: ns,
            written: status.clone(),
            status,
            step: condition_types::INSTANCE_READY,
        }
    }

    /// Key of this object in the context's memo tables.
    pub fn key(&self) -> String {
        format!("{}/machine", self.osm.uid().unwrap_or_default())
    }

    /// `OpenStackMachine ns/name`, for messages.
    pub fn object(&self) -> String {
        format!("OpenStackMachine {}/{}", self.namespace, self.name)
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
        crate::status::apply_status(&self.api, &self.name, &self.status).await?;
        self.written = self.status.clone();
        Ok(())
    }

    /// Report `err` on the current step's condition and on Ready, write status and emit a
    /// Warning event; returns the error for the backoff.
    pub async fn fail(&mut self, err: Error) -> Error {
        if err.is_conflict() {
            return err;
        }
        let reason = match (&err, self.step) {
            (Error::InvalidSpec(_), _) => condition_reasons::INVALID_MACHINE_SPEC,
            (Error::Credentials(_), _) => "InvalidCredentials",
            (_, condition_types::API_SERVER_INGRESS_READY) => {
                condition_reasons::LOAD_BALANCER_MEMBER_ERROR
            }
            _ => condition_reasons::OPENSTACK_ERROR,
        };
        let message = err.to_string();
        let step = self.step;
        self.set(step, State::error(reason, message.clone()));
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
            .publish(self.osm, type_, reason, action, note)
            .await;
    }
}
