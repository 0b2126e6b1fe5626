//! OpenStackServer, OpenStackFloatingIPPool and OpenStackClusterIdentity.

use super::common::{check_ip, check_network_param, check_unique};
use super::immutability::check_unchanged;
use super::machine::{ServerShape, check_server_shape};
use super::{FieldError, FieldPath, UpdateContext, Validate, ValidationErrors};
use crate::conversion::server::server_spec_to_v1beta1;
use crate::v1alpha1::{
    LabelSelector, OpenStackClusterIdentity, OpenStackFloatingIPPool, OpenStackServer,
    OpenStackServerSpec, PortOpts,
};

/// The machine rules, on the spec in v1beta1's shapes (the shape they are written for; the
/// legacy `disablePortSecurity` folded into it), plus the ports' port-security fields.
fn check_server_spec(path: &FieldPath, spec: &OpenStackServerSpec, errors: &mut Vec<FieldError>) {
    check_port_security_fields(&path.child("ports"), &spec.ports, errors);
    let view = match server_spec_to_v1beta1(spec) {
        Ok(view) => view,
        Err(e) => {
            // The conversion names the field relative to the object (`spec....`).
            let field = FieldPath::new(&e.path.replacen("spec", path.as_str(), 1));
            errors.push(FieldError::forbidden(&field, e.reason));
            return;
        }
    };
    let shape = ServerShape {
        flavor: view.flavor.as_deref(),
        flavor_id: view.flavor_id.as_deref(),
        image: &view.image,
        ports: &view.ports,
        security_groups: &view.security_groups,
        server_group: view.server_group.as_ref(),
        root_volume: view.root_volume.as_ref(),
        additional_block_devices: &view.additional_block_devices,
        scheduler_hints: &view.scheduler_hint_additional_properties,
        tags: &view.tags,
    };
    check_server_shape(path, &shape, errors);
}

/// A port may carry both `enablePortSecurity` and the legacy `disablePortSecurity` (a stored
/// server's port given the new field), but only when they agree: `enablePortSecurity` would win
/// silently otherwise.
fn check_port_security_fields(path: &FieldPath, ports: &[PortOpts], errors: &mut Vec<FieldError>) {
    for (i, port) in ports.iter().enumerate() {
        let (Some(enable), Some(disable)) =
            (port.opts.enable_port_security, port.disable_port_security)
        else {
            continue;
        };
        if enable == disable {
            let detail = format!(
                "contradicts the deprecated disablePortSecurity: {disable}; set only \
                 enablePortSecurity (disablePortSecurity: true is enablePortSecurity: false)"
            );
            errors.push(FieldError::invalid(
                &path.index(i).child("enablePortSecurity"),
                enable,
                detail,
            ));
        }
    }
}

impl Validate for OpenStackServer {
    fn validate_create(&self) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        check_server_spec(&FieldPath::new("spec"), &self.spec, &mut errors);
        ValidationErrors::into_result(errors)
    }

    /// A server's spec is immutable: it describes one Nova server, which cannot be rebuilt
    /// in place; the identity may be rotated, and each port's `allowedAddressPairs` may change
    /// (the server controller updates the port). As upstream, the Cluster API topology
    /// controller's dry runs are not held to immutability (they persist nothing).
    fn validate_update(&self, old: &Self, context: &UpdateContext) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let spec = FieldPath::new("spec");
        check_server_spec(&spec, &self.spec, &mut errors);
        let mut allowed = old.spec.clone();
        allowed.identity_ref = self.spec.identity_ref.clone();
        super::machine::take_address_pairs(&mut allowed.ports, &self.spec.ports, |p| {
            &mut p.opts.allowed_address_pairs
        });
        if old.spec.identity_ref.region != self.spec.identity_ref.region {
            errors.push(FieldError::immutable(
                &spec.child("identityRef").child("region"),
                "region is immutable",
            ));
        }
        let detail = "a server's spec cannot change; delete and recreate it";
        if !context.topology_dry_run {
            check_unchanged(&spec, &allowed, &self.spec, detail, &mut errors);
        }
        ValidationErrors::into_result(errors)
    }
}

impl Validate for OpenStackFloatingIPPool {
    fn validate_create(&self) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let spec = FieldPath::new("spec");
        if let Some(network) = &self.spec.floating_ip_network {
            check_network_param(&spec.child("floatingIPNetwork"), network, &mut errors);
        }
        let pre = spec.child("preAllocatedFloatingIPs");
        for (i, ip) in self.spec.pre_allocated_floating_ips.iter().enumerate() {
            check_ip(&pre.index(i), ip, &mut errors);
        }
        check_unique(
            &pre,
            self.spec.pre_allocated_floating_ips.iter(),
            &mut errors,
        );
        if let Some(max) = self.spec.max_ips.filter(|m| *m < 0) {
            errors.push(FieldError::invalid(
                &spec.child("maxIPs"),
                max,
                "must not be negative",
            ));
        }
        ValidationErrors::into_result(errors)
    }

    /// Pools may be resized and refilled; the network they allocate from may not move, or
    /// addresses already handed out would come from two networks.
    fn validate_update(
        &self,
        old: &Self,
        _context: &UpdateContext,
    ) -> Result<(), ValidationErrors> {
        let mut errors = self
            .validate_create()
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        let path = FieldPath::new("spec").child("floatingIPNetwork");
        let detail = "the pool's network cannot change while it owns addresses";
        check_unchanged(
            &path,
            &old.spec.floating_ip_network,
            &self.spec.floating_ip_network,
            detail,
            &mut errors,
        );
        ValidationErrors::into_result(errors)
    }
}

fn check_selector(path: &FieldPath, selector: &LabelSelector, errors: &mut Vec<FieldError>) {
    for (i, requirement) in selector.match_expressions.iter().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let needs_values = match requirement.operator.as_str() {
            "In" | "NotIn" => true,
            "Exists" | "DoesNotExist" => false,
            other => {
                errors.push(FieldError::invalid(
                    &p.child("operator"),
                    other,
                    "must be In, NotIn, Exists or DoesNotExist",
                ));
                continue;
            }
        };
        if needs_values && requirement.values.is_empty() {
            errors.push(FieldError::required(
                &p.child("values"),
                "In and NotIn need at least one value",
            ));
        }
        if !needs_values && !requirement.values.is_empty() {
            errors.push(FieldError::forbidden(
                &p.child("values"),
                "Exists and DoesNotExist take no values",
            ));
        }
    }
}

impl Validate for OpenStackClusterIdentity {
    fn validate_create(&self) -> Result<(), ValidationErrors> {
        let mut errors = Vec::new();
        let spec = FieldPath::new("spec");
        let secret = spec.child("secretRef");
        if self.spec.secret_ref.name.is_empty() {
            errors.push(FieldError::required(
                &secret.child("name"),
                "the Secret holding clouds.yaml",
            ));
        }
        if self.spec.secret_ref.namespace.is_empty() {
            errors.push(FieldError::required(
                &secret.child("namespace"),
                "the Secret's namespace",
            ));
        }
        if let Some(selector) = &self.spec.namespace_selector {
            check_selector(&spec.child("namespaceSelector"), selector, &mut errors);
        }
        ValidationErrors::into_result(errors)
    }

    fn validate_update(
        &self,
        _old: &Self,
        _context: &UpdateContext,
    ) -> Result<(), ValidationErrors> {
        self.validate_create()
    }
}
