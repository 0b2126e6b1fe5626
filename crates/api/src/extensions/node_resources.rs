//! Default kubelet reservations of a node, computed from its flavor.
//!
//! The policy (documented here because BA/ACP playbooks depend on it):
//! - `kube_cpu_reserved`: 6% of the first vCPU, 1% of the second, 0.5% of the third and fourth,
//!   0.25% of every further vCPU (the tiered formula large managed Kubernetes offerings publish),
//!   at least Kubespray's default of 100m;
//! - `kube_memory_reserved`: 25% of the first 4 GiB of RAM, 20% of the next 4, 10% of the next 8,
//!   6% of the next 112 and 2% above 128 GiB, at least Kubespray's default of 256Mi;
//! - `system_cpu_reserved`: 10% of the vCPUs, between 100m and Kubespray's default of 500m;
//! - `system_memory_reserved`: 5% of RAM, between 128Mi and Kubespray's default of 512Mi;
//! - both ephemeral-storage reservations: Kubespray's default of 500Mi.
//!
//! Values in a machine's `spec.extensions.nodeResources.reserved` override single fields.

use super::ReservedResources;

/// Computes the default reservations for a flavor with `vcpus` and `ram_mib` MiB of RAM.
pub fn reserved_for_flavor(vcpus: u32, ram_mib: u64) -> ReservedResources {
    let kube_cpu = kube_cpu_millis(vcpus).max(100);
    let kube_memory = kube_memory_mib(ram_mib).max(256);
    let system_cpu = (u64::from(vcpus) * 100).clamp(100, 500);
    let system_memory = (ram_mib / 20).clamp(128, 512);
    ReservedResources {
        kube_cpu_reserved: Some(format!("{kube_cpu}m")),
        kube_memory_reserved: Some(format!("{kube_memory}Mi")),
        kube_ephemeral_storage_reserved: Some("500Mi".into()),
        system_cpu_reserved: Some(format!("{system_cpu}m")),
        system_memory_reserved: Some(format!("{system_memory}Mi")),
        system_ephemeral_storage_reserved: Some("500Mi".into()),
    }
}

impl ReservedResources {
    /// These values where set, `computed` elsewhere.
    pub fn merged_over(&self, computed: &ReservedResources) -> ReservedResources {
        let pick =
            |own: &Option<String>, other: &Option<String>| own.clone().or_else(|| other.clone());
        ReservedResources {
            kube_cpu_reserved: pick(&self.kube_cpu_reserved, &computed.kube_cpu_reserved),
            kube_memory_reserved: pick(&self.kube_memory_reserved, &computed.kube_memory_reserved),
            kube_ephemeral_storage_reserved: pick(
                &self.kube_ephemeral_storage_reserved,
                &computed.kube_ephemeral_storage_reserved,
            ),
            system_cpu_reserved: pick(&self.system_cpu_reserved, &computed.system_cpu_reserved),
            system_memory_reserved: pick(
                &self.system_memory_reserved,
                &computed.system_memory_reserved,
            ),
            system_ephemeral_storage_reserved: pick(
                &self.system_ephemeral_storage_reserved,
                &computed.system_ephemeral_storage_reserved,
            ),
        }
    }
}

/// Tiered CPU reservation in millicores, computed in hundredths of a percent to stay exact.
fn kube_cpu_millis(vcpus: u32) -> u64 {
    // (cores in tier, basis points of a core = 1/100 %); 1000m * bp / 10000 = bp / 10.
    let tiers: [(u64, u64); 4] = [(1, 600), (1, 100), (2, 50), (u64::MAX, 25)];
    tiered(u64::from(vcpus), &tiers) / 10
}

/// Tiered memory reservation in MiB.
fn kube_memory_mib(ram_mib: u64) -> u64 {
    // (MiB in tier, percent).
    let tiers: [(u64, u64); 5] = [
        (4096, 25),
        (4096, 20),
        (8192, 10),
        (114_688, 6),
        (u64::MAX, 2),
    ];
    tiered(ram_mib, &tiers) / 100
}

/// Sum over tiers of `min(remaining, size) * rate`.
fn tiered(mut amount: u64, tiers: &[(u64, u64)]) -> u64 {
    let mut total = 0;
    for &(size, rate) in tiers {
        let part = amount.min(size);
        total += part * rate;
        amount -= part;
        if amount == 0 {
            break;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_flavor_gets_kubespray_floors() {
        let r = reserved_for_flavor(1, 1024);
        assert_eq!(r.kube_cpu_reserved.as_deref(), Some("100m"));
        assert_eq!(r.kube_memory_reserved.as_deref(), Some("256Mi"));
        assert_eq!(r.system_cpu_reserved.as_deref(), Some("100m"));
        assert_eq!(r.system_memory_reserved.as_deref(), Some("128Mi"));
        assert_eq!(r.kube_ephemeral_storage_reserved.as_deref(), Some("500Mi"));
    }

    #[test]
    fn tiers_add_up() {
        // 4 vCPU: 60 + 10 + 5 + 5 = 80m; 8 GiB: 1024 + 819 = 1843Mi.
        let r = reserved_for_flavor(4, 8192);
        assert_eq!(r.kube_cpu_reserved.as_deref(), Some("100m"));
        assert_eq!(r.kube_memory_reserved.as_deref(), Some("1843Mi"));
        assert_eq!(r.system_cpu_reserved.as_deref(), Some("400m"));
        assert_eq!(r.system_memory_reserved.as_deref(), Some("409Mi"));
        // 32 vCPU: 80 + 28 * 2.5 = 150m; system capped at 500m and 512Mi.
        let r = reserved_for_flavor(32, 131_072);
        assert_eq!(r.kube_cpu_reserved.as_deref(), Some("150m"));
        assert_eq!(r.system_cpu_reserved.as_deref(), Some("500m"));
        assert_eq!(r.system_memory_reserved.as_deref(), Some("512Mi"));
        // 128 GiB: 1024 + 819 + 819 + 6881 = 9543Mi (integer MiB).
        assert_eq!(r.kube_memory_reserved.as_deref(), Some("9543Mi"));
    }

    #[test]
    fn override_wins_field_by_field() {
        let computed = reserved_for_flavor(2, 4096);
        let user = ReservedResources {
            kube_cpu_reserved: Some("250m".into()),
            ..Default::default()
        };
        let merged = user.merged_over(&computed);
        assert_eq!(merged.kube_cpu_reserved.as_deref(), Some("250m"));
        assert_eq!(merged.kube_memory_reserved, computed.kube_memory_reserved);
    }
}
