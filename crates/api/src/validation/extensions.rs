//! The BA/ACP extension fields.

use super::common::{check_ip, check_port, check_unique};
use super::{FieldError, FieldPath};
use crate::extensions::{
    KUBE_NETWORK_PLUGINS, LOAD_BALANCER_MODE_KEEPALIVED, LOAD_BALANCER_MODE_OCTAVIA,
    LOAD_BALANCER_MODES, OpenStackClusterExtensions, OpenStackMachineExtensions, ReservedResources,
};
use crate::v1beta1::OpenStackClusterSpec;

/// Linux interface names: 1-15 bytes, no slash, no white space, not `.` or `..`.
fn check_interface_name(path: &FieldPath, name: &str, errors: &mut Vec<FieldError>) {
    let valid = !name.is_empty()
        && name.len() <= 15
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == ':' || c.is_whitespace());
    if !valid {
        let detail = "must be a Linux interface name: 1-15 characters, no '/', ':' or spaces";
        errors.push(FieldError::invalid(path, name, detail));
    }
}

/// A Kubernetes quantity such as `500m`, `1Gi`, `1.5`, `2e3`: digits, an optional fraction and
/// an optional suffix; the reservation variables are handed to kubelet as quantities.
fn is_quantity(value: &str) -> bool {
    let suffixes = [
        "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E", "",
    ];
    let number = suffixes
        .iter()
        .find_map(|s| value.strip_suffix(s).filter(|n| !n.is_empty()))
        .unwrap_or(value);
    let (mantissa, exponent) = match number.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (number, None),
    };
    let digits_ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => (int.is_empty() || digits_ok(int)) && digits_ok(frac),
        None => digits_ok(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits_ok(e.trim_start_matches(['+', '-'])));
    mantissa_ok && exponent_ok
}

fn check_reserved(path: &FieldPath, reserved: &ReservedResources, errors: &mut Vec<FieldError>) {
    let fields = [
        ("kubeCpuReserved", &reserved.kube_cpu_reserved),
        ("kubeMemoryReserved", &reserved.kube_memory_reserved),
        (
            "kubeEphemeralStorageReserved",
            &reserved.kube_ephemeral_storage_reserved,
        ),
        ("systemCpuReserved", &reserved.system_cpu_reserved),
        ("systemMemoryReserved", &reserved.system_memory_reserved),
        (
            "systemEphemeralStorageReserved",
            &reserved.system_ephemeral_storage_reserved,
        ),
    ];
    for (name, value) in fields {
        if let Some(value) = value.as_deref().filter(|v| !is_quantity(v)) {
            let detail = "must be a Kubernetes quantity such as 500m, 512Mi or 1Gi";
            errors.push(FieldError::invalid(&path.child(name), value, detail));
        }
    }
}

/// Machine extensions: the keepalived interface and reservation overrides.
pub(crate) fn check_machine_extensions(
    path: &FieldPath,
    extensions: &OpenStackMachineExtensions,
    errors: &mut Vec<FieldError>,
) {
    let keepalived = extensions
        .network_interfaces
        .as_ref()
        .and_then(|n| n.keepalived.as_deref());
    if let Some(name) = keepalived {
        check_interface_name(
            &path.child("networkInterfaces").child("keepalived"),
            name,
            errors,
        );
    }
    let reserved = extensions
        .node_resources
        .as_ref()
        .and_then(|n| n.reserved.as_ref());
    if let Some(reserved) = reserved {
        check_reserved(
            &path.child("nodeResources").child("reserved"),
            reserved,
            errors,
        );
    }
}

fn check_mode(path: &FieldPath, mode: &str, errors: &mut Vec<FieldError>) {
    if !LOAD_BALANCER_MODES.contains(&mode) {
        let detail = format!("must be one of {}", LOAD_BALANCER_MODES.join(", "));
        errors.push(FieldError::invalid(path, mode, detail));
    }
}

/// The control-plane VIP mode must agree with the upstream API load balancer switch: Octavia
/// mode *is* that load balancer, Keepalived mode replaces it.
fn check_control_plane_mode(
    path: &FieldPath,
    mode: &str,
    spec: &OpenStackClusterSpec,
    errors: &mut Vec<FieldError>,
) {
    let lb_enabled = spec.api_load_balancer_enabled();
    if mode == LOAD_BALANCER_MODE_KEEPALIVED && lb_enabled {
        let detail = "Keepalived mode replaces the API load balancer: set spec.apiServerLoadBalancer.enabled to false";
        errors.push(FieldError::forbidden(path, detail));
    }
    if mode == LOAD_BALANCER_MODE_OCTAVIA && !lb_enabled {
        let detail = "Octavia mode uses the API load balancer: set spec.apiServerLoadBalancer.enabled to true";
        errors.push(FieldError::forbidden(path, detail));
    }
    if mode == LOAD_BALANCER_MODE_KEEPALIVED
        && spec.disable_api_server_floating_ip != Some(true)
        && spec.disable_external_network == Some(true)
    {
        let detail = "Keepalived mode needs an external network for the API floating IP, or disableAPIServerFloatingIP";
        errors.push(FieldError::forbidden(path, detail));
    }
}

/// Cluster extensions, checked against the rest of the cluster spec they depend on.
pub(crate) fn check_cluster_extensions(
    path: &FieldPath,
    extensions: &OpenStackClusterExtensions,
    spec: &OpenStackClusterSpec,
    errors: &mut Vec<FieldError>,
) {
    let plugin = extensions
        .networking
        .as_ref()
        .and_then(|n| n.kube_network_plugin.as_deref());
    if let Some(plugin) = plugin.filter(|p| !KUBE_NETWORK_PLUGINS.contains(p)) {
        let detail = format!("must be one of {}", KUBE_NETWORK_PLUGINS.join(", "));
        errors.push(FieldError::invalid(
            &path.child("networking").child("kubeNetworkPlugin"),
            plugin,
            detail,
        ));
    }
    let flannel = extensions
        .network_interfaces
        .as_ref()
        .and_then(|n| n.flannel.as_deref());
    if let Some(name) = flannel {
        check_interface_name(
            &path.child("networkInterfaces").child("flannel"),
            name,
            errors,
        );
    }
    let lbs = path.child("loadBalancers");
    let load_balancers = extensions.load_balancers.as_ref();
    if let Some(cp) = load_balancers.and_then(|l| l.control_plane.as_ref()) {
        let p = lbs.child("controlPlane");
        check_mode(&p.child("mode"), &cp.mode, errors);
        check_control_plane_mode(&p.child("mode"), &cp.mode, spec, errors);
        if let Some(vip) = &cp.vip_address {
            check_ip(&p.child("vipAddress"), vip, errors);
        }
    }
    if let Some(ingress) = load_balancers.and_then(|l| l.ingress.as_ref()) {
        let p = lbs.child("ingress");
        check_mode(&p.child("mode"), &ingress.mode, errors);
        for (i, port) in ingress.ports.iter().enumerate() {
            check_port(&p.child("ports").index(i), *port, errors);
        }
        check_unique(&p.child("ports"), ingress.ports.iter().copied(), errors);
        if let Some(vip) = &ingress.vip_address {
            check_ip(&p.child("vipAddress"), vip, errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_quantity;

    #[test]
    fn quantities() {
        for ok in ["100m", "1", "0.5", "512Mi", "1Gi", "2e3", "1.5G", ".5"] {
            assert!(is_quantity(ok), "{ok} should be a quantity");
        }
        for bad in ["", "Mi", "1.2.3", "abc", "1 Gi", "-1", "1x"] {
            assert!(!is_quantity(bad), "{bad} should not be a quantity");
        }
    }
}
