//! The managed security groups and their rules.
//!
//! Groups are looked up in one request (by recorded IDs when all are known, else by their
//! names), created when missing (Neutron adds the default egress rules itself), tagged, and
//! their rules reconciled with [`crate::plan::rule_diff::diff`]: missing rules are created,
//! rules of ours that are no longer wanted are deleted, others only in strict mode.
//! A disabled bastion's group is not deleted here (the cluster delete removes it).

use capo_api::names::SecurityGroupRole;
use capo_api::v1beta1::{OpenStackClusterSpec, SecurityGroupStatus};
use capo_openstack::Session;
use capo_openstack::network::{
    self as net, ListFilter, SECURITY_GROUP, SECURITY_GROUP_RULE, SecurityGroup,
    SecurityGroupCreate, SecurityGroupRule,
};

use crate::error::{Context, Error, Result};
use crate::networking::lookup::{Origin, delete_opt, ensure_tags, find_owned, pick_owned};
use crate::ownership::Owner;
use crate::plan::rule_diff::{DesiredRule, RuleKey, diff};
use crate::plan::security_groups::{GroupIds, desired_groups, desired_rules, managed};

/// The managed groups, as recorded in status.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecurityGroups {
    /// `status.controlPlaneSecurityGroup`.
    pub control_plane: Option<SecurityGroupStatus>,
    /// `status.workerSecurityGroup`.
    pub worker: Option<SecurityGroupStatus>,
    /// `status.bastionSecurityGroup`.
    pub bastion: Option<SecurityGroupStatus>,
}

impl SecurityGroups {
    fn get(&self, role: SecurityGroupRole) -> Option<&SecurityGroupStatus> {
        match role {
            SecurityGroupRole::ControlPlane => self.control_plane.as_ref(),
            SecurityGroupRole::Worker => self.worker.as_ref(),
            SecurityGroupRole::Bastion => self.bastion.as_ref(),
        }
    }

    fn set(&mut self, role: SecurityGroupRole, v: SecurityGroupStatus) {
        match role {
            SecurityGroupRole::ControlPlane => self.control_plane = Some(v),
            SecurityGroupRole::Worker => self.worker = Some(v),
            SecurityGroupRole::Bastion => self.bastion = Some(v),
        }
    }
}

/// Ensure the managed groups and their rules. `Ok(None)` when the spec manages none.
/// `ipv4_subnet_cidr`: the cluster network's IPv4 subnet (a NodePort rule source).
/// `strict`: also delete rules this provider did not create.
pub async fn ensure_security_groups(
    s: &Session,
    owner: &Owner,
    spec: &OpenStackClusterSpec,
    ipv4_subnet_cidr: Option<&str>,
    recorded: &SecurityGroups,
    strict: bool,
) -> Result<Option<SecurityGroups>> {
    if !managed(spec) {
        return Ok(None);
    }
    let wanted = desired_groups(spec, &owner.namespace, &owner.name);
    let mut observed = lookup(s, &wanted, recorded).await?;
    let mut groups: Vec<(SecurityGroupRole, SecurityGroup)> = Vec::new();
    for (role, name) in &wanted {
        let candidates: Vec<SecurityGroup> = observed
            .iter()
            .filter(|g| &g.name == name)
            .cloned()
            .collect();
        observed.retain(|g| &g.name != name);
        let (mut g, origin) = match pick_owned(owner, "security group", candidates)? {
            Some(g) => (g, Origin::Found),
            None => (create_group(s, owner, name).await?, Origin::Created),
        };
        g.tags = ensure_tags(s, owner, SECURITY_GROUP, &g, origin).await?;
        groups.push((*role, g));
    }
    let id_of = |role| {
        groups
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, g)| g.id.clone())
    };
    let ids = GroupIds {
        control_plane: id_of(SecurityGroupRole::ControlPlane).unwrap_or_default(),
        worker: id_of(SecurityGroupRole::Worker).unwrap_or_default(),
        bastion: id_of(SecurityGroupRole::Bastion),
    };
    let desired = desired_rules(spec, &ids, ipv4_subnet_cidr)?;
    let mut out = SecurityGroups::default();
    let mut to_create: Vec<SecurityGroupRule> = Vec::new();
    for (role, g) in &groups {
        let rules: &[DesiredRule] = match role {
            SecurityGroupRole::ControlPlane => &desired.control_plane,
            SecurityGroupRole::Worker => &desired.worker,
            SecurityGroupRole::Bastion => desired.bastion.as_deref().unwrap_or_default(),
        };
        to_create.extend(reconcile_rules(s, g, rules, strict).await?);
    }
    create_rules(s, &to_create).await?;
    for (role, g) in &groups {
        out.set(
            *role,
            SecurityGroupStatus {
                id: g.id.clone(),
                name: g.name.clone(),
            },
        );
    }
    Ok(Some(out))
}

/// One list: by the recorded IDs when every wanted group has one (a group deleted out of band
/// is then looked up by name), else by the wanted names.
async fn lookup(
    s: &Session,
    wanted: &[(SecurityGroupRole, String)],
    recorded: &SecurityGroups,
) -> Result<Vec<SecurityGroup>> {
    let ids: Vec<&str> = wanted
        .iter()
        .filter_map(|(r, _)| recorded.get(*r))
        .map(|g| g.id.as_str())
        .collect();
    if ids.len() == wanted.len() {
        let mut f = ListFilter::default();
        for id in &ids {
            f = f.with("id", *id);
        }
        let found: Vec<SecurityGroup> = net::list(s, SECURITY_GROUP, &f)
            .await
            .ctx(|| "list security groups by id".to_owned())?;
        if wanted
            .iter()
            .all(|(_, n)| found.iter().any(|g| &g.name == n))
        {
            return Ok(found);
        }
    }
    list_by_names(s, wanted.iter().map(|(_, n)| n.as_str())).await
}

async fn list_by_names(
    s: &Session,
    names: impl Iterator<Item = &str>,
) -> Result<Vec<SecurityGroup>> {
    let mut f = ListFilter::default();
    for n in names {
        f = f.with("name", n);
    }
    net::list(s, SECURITY_GROUP, &f)
        .await
        .ctx(|| "list security groups by name".to_owned())
}

async fn create_group(s: &Session, owner: &Owner, name: &str) -> Result<SecurityGroup> {
    let body = SecurityGroupCreate {
        name: name.to_owned(),
        description: Some(format!(
            "Created by capo for OpenStackCluster {}/{}",
            owner.namespace, owner.name
        )),
    };
    net::create(s, SECURITY_GROUP, &body)
        .await
        .ctx(|| format!("create security group {name}"))
}

/// Delete the rules that must go; return the ones to create (created together by the caller).
async fn reconcile_rules(
    s: &Session,
    g: &SecurityGroup,
    desired: &[DesiredRule],
    strict: bool,
) -> Result<Vec<SecurityGroupRule>> {
    let d = diff(desired, &g.security_group_rules, strict);
    for id in &d.delete {
        delete_opt(s, SECURITY_GROUP_RULE, id).await?;
    }
    Ok(d.create.iter().map(|r| r.to_create(&g.id)).collect())
}

/// Create the missing rules, one request per security group: a Neutron bulk create is atomic
/// (a failure creates none, and a lost reply is healed by the next diff, which sees what was
/// created), but Neutron refuses a bulk whose rules belong to more than one group
/// (`SecurityGroupNotSingleGroupRules`).
async fn create_rules(s: &Session, rules: &[SecurityGroupRule]) -> Result<()> {
    let mut groups: Vec<&str> = Vec::new();
    for r in rules {
        if !groups.contains(&r.security_group_id.as_str()) {
            groups.push(&r.security_group_id);
        }
    }
    for group in groups {
        let of_group: Vec<&SecurityGroupRule> = rules
            .iter()
            .filter(|r| r.security_group_id == group)
            .collect();
        match of_group.as_slice() {
            [] => {}
            [one] => {
                let _: SecurityGroupRule = net::create(s, SECURITY_GROUP_RULE, one)
                    .await
                    .ctx(|| format!("create rule {:?}", one.description))?;
            }
            many => {
                let _: Vec<SecurityGroupRule> = net::create_bulk(s, SECURITY_GROUP_RULE, many)
                    .await
                    .ctx(|| format!("create {} rules of security group {group}", many.len()))?;
            }
        }
    }
    Ok(())
}

/// Ensure the group `name` allows all traffic in and out, IPv4 and IPv6 (Neutron's default
/// egress rules already count). Found by the recorded ID, else by name; created and tagged
/// when missing; rules of ours that are not allow-all are removed, others left alone.
pub async fn ensure_allow_all_group(
    s: &Session,
    owner: &Owner,
    name: &str,
    recorded: Option<&str>,
) -> Result<SecurityGroup> {
    let found = find_owned::<SecurityGroup>(
        s,
        owner,
        SECURITY_GROUP,
        recorded,
        ListFilter::by_name(name),
    )
    .await?;
    let (mut g, origin) = match found {
        Some(g) => (g, Origin::Found),
        None => (create_group(s, owner, name).await?, Origin::Created),
    };
    g.tags = ensure_tags(s, owner, SECURITY_GROUP, &g, origin).await?;
    let desired: Vec<DesiredRule> = ["ingress", "egress"]
        .into_iter()
        .flat_map(|direction| {
            ["IPv4", "IPv6"].map(|ethertype| DesiredRule {
                key: RuleKey::new(direction, ethertype, None, (None, None), None, None),
                description: format!("Allow all {direction} {ethertype}"),
            })
        })
        .collect();
    let to_create = reconcile_rules(s, &g, &desired, false).await?;
    create_rules(s, &to_create).await?;
    Ok(g)
}

/// Delete the three managed groups (bastion's too, whether or not it is enabled now). Absent
/// is success; another cluster's group is left alone; a group still in use by a port comes
/// back as a retryable 409 after the other groups were attempted.
pub async fn delete_security_groups(s: &Session, owner: &Owner) -> Result<()> {
    let roles = [
        SecurityGroupRole::ControlPlane,
        SecurityGroupRole::Worker,
        SecurityGroupRole::Bastion,
    ];
    let names: Vec<String> = roles
        .iter()
        .map(|r| capo_api::names::security_group_name(&owner.namespace, &owner.name, *r))
        .collect();
    delete_named_groups(s, owner, &names).await
}

/// Delete our groups of these names (one list request), as [`delete_security_groups`] does.
pub async fn delete_named_groups(s: &Session, owner: &Owner, names: &[String]) -> Result<()> {
    let found = list_by_names(s, names.iter().map(String::as_str)).await?;
    let mut first_err = None;
    for name in names {
        let candidates: Vec<SecurityGroup> =
            found.iter().filter(|g| &g.name == name).cloned().collect();
        let g = match pick_owned(owner, "security group", candidates) {
            Ok(Some(g)) => g,
            Ok(None) => continue,
            Err(Error::ForeignResource { id, owner_tag, .. }) => {
                tracing::warn!(%id, %owner_tag, "security group with our name belongs to another cluster; left alone");
                continue;
            }
            Err(e) => return Err(e),
        };
        // Keep going: upstream returned at the first failure and left the others behind.
        if let Err(e) = delete_opt(s, SECURITY_GROUP, &g.id).await {
            first_err.get_or_insert(e);
        }
    }
    first_err.map_or(Ok(()), Err)
}
