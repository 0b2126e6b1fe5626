//! Neutron security groups and rules: default groups and egress rules, duplicate and in-use 409s.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::http::{AppState, Ctx};
use crate::network::handlers::{
    create_route, delete_route, list_route, resource_routes, update_route,
};
use crate::network::ipam::Cidr;
use crate::network::{SVC, check_quota, created, find, find_owned, lock, new_body, req_member};
use crate::world::{Rec, World, new_id, now_str};

const COL: &str = "security_groups";
const RULES: &str = "security_group_rules";

/// A group with its rules joined in.
pub fn render(w: &World, rec: &Rec) -> Value {
    let mut b = rec.body.clone();
    let id = &rec.body["id"];
    let rules: Vec<Value> = w
        .iter(RULES)
        .filter(|(_, r)| &r.body["security_group_id"] == id)
        .map(|(_, r)| r.body.clone())
        .collect();
    b["security_group_rules"] = Value::Array(rules);
    b
}

fn rule_defaults() -> Value {
    json!({
        "security_group_id": null, "direction": null, "ethertype": "IPv4", "protocol": null, "port_range_min": null,
        "port_range_max": null, "remote_ip_prefix": null, "remote_group_id": null, "remote_address_group_id": null,
        "normalized_cidr": null, "description": "", "belongs_to_default_sg": false,
    })
}

fn insert_rule(
    w: &mut World,
    project: &str,
    sg: &str,
    direction: &str,
    ethertype: &str,
    remote_group: Option<&str>,
    default_sg: bool,
) {
    let id = new_id();
    let now = now_str();
    let mut body = rule_defaults();
    for (k, v) in [
        ("id", json!(id)),
        ("tenant_id", json!(project)),
        ("project_id", json!(project)),
        ("security_group_id", json!(sg)),
        ("direction", json!(direction)),
        ("ethertype", json!(ethertype)),
        ("remote_group_id", json!(remote_group)),
        ("belongs_to_default_sg", json!(default_sg)),
        ("created_at", json!(now)),
        ("updated_at", json!(now)),
        ("revision_number", json!(0)),
        ("tags", json!([])),
    ] {
        body[k] = v;
    }
    w.insert(RULES, &id, project, body);
}

fn insert_group(
    w: &mut World,
    project: &str,
    name: &str,
    description: &str,
    extra: &Value,
) -> Value {
    let id = new_id();
    let now = now_str();
    let mut body = json!({
        "id": id, "name": name, "description": description, "tenant_id": project, "project_id": project,
        "stateful": true, "shared": false, "tags": [], "created_at": now, "updated_at": now, "revision_number": 1,
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        body[k] = v.clone();
    }
    w.insert(COL, &id, project, body.clone());
    let is_default = name == "default";
    for eth in ["IPv4", "IPv6"] {
        insert_rule(w, project, &id, "egress", eth, None, is_default);
        if is_default {
            insert_rule(w, project, &id, "ingress", eth, Some(&id), true);
        }
    }
    body
}

/// Create the project's default group if it has none yet.
pub fn ensure_default(w: &mut World, project: &str) {
    if project.is_empty() || w.default_sg.contains_key(project) {
        return;
    }
    let body = insert_group(w, project, "default", "Default security group", &json!({}));
    w.default_sg.insert(
        project.to_string(),
        body["id"].as_str().unwrap_or_default().to_string(),
    );
}

fn create(w: &mut World, ctx: &Ctx, req: Value) -> ApiResult<Value> {
    let defaults = json!({"name": "", "description": "", "stateful": true, "shared": false});
    let (project, body) = new_body(ctx, &req, defaults)?;
    check_quota(w, &project, COL, "security_group")?;
    if body["name"] == json!("default") {
        return Err(ApiError::conflict(
            SVC,
            "SecurityGroupDefaultAlreadyExists",
            "Default security group already exists.",
        ));
    }
    let extra = json!({"tags": body["tags"], "stateful": body["stateful"]});
    let out = insert_group(
        w,
        &project,
        body["name"].as_str().unwrap_or(""),
        body["description"].as_str().unwrap_or(""),
        &extra,
    );
    Ok(render(w, &Rec { project, body: out }))
}

fn delete(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    let rec = find_owned(w, ctx, COL, id)?.clone();
    if rec.body["name"] == json!("default") && !ctx.admin {
        return Err(ApiError::conflict(
            SVC,
            "SecurityGroupCannotRemoveDefault",
            "Insufficient rights for removing default security group.",
        ));
    }
    let in_use = w.iter("ports").any(|(_, p)| {
        p.body["security_groups"]
            .as_array()
            .is_some_and(|a| a.contains(&json!(id)))
    });
    if in_use {
        return Err(ApiError::conflict(
            SVC,
            "SecurityGroupInUse",
            format!("Security Group {id} in use."),
        ));
    }
    let rules: Vec<String> = w
        .iter(RULES)
        .filter(|(_, r)| {
            r.body["security_group_id"] == json!(id) || r.body["remote_group_id"] == json!(id)
        })
        .map(|(k, _)| k.clone())
        .collect();
    for r in rules {
        w.remove(RULES, &r);
    }
    w.remove(COL, id);
    if w.default_sg.get(&rec.project).map(String::as_str) == Some(id) {
        w.default_sg.remove(&rec.project);
    }
    Ok(())
}

fn protocol_number(p: &str) -> Option<u8> {
    match p {
        "tcp" => Some(6),
        "udp" => Some(17),
        "icmp" => Some(1),
        "ipv6-icmp" | "icmpv6" => Some(58),
        "sctp" => Some(132),
        "vrrp" => Some(112),
        "gre" => Some(47),
        "esp" => Some(50),
        "ah" => Some(51),
        "any" => Some(0),
        n => n.parse().ok(),
    }
}

fn invalid(kind: &'static str, msg: impl Into<String>) -> ApiError {
    ApiError::bad_request(SVC, msg).kind(kind)
}

fn validate_rule(body: &mut Value) -> ApiResult<()> {
    let direction = body["direction"].as_str().unwrap_or("");
    if direction != "ingress" && direction != "egress" {
        return Err(invalid(
            "InvalidInput",
            format!(
                "Invalid input for direction. Reason: '{direction}' is not in ['ingress', 'egress']."
            ),
        ));
    }
    let eth = body["ethertype"].as_str().unwrap_or("IPv4").to_string();
    if eth != "IPv4" && eth != "IPv6" {
        return Err(invalid(
            "InvalidInput",
            format!("Invalid input for ethertype. Reason: '{eth}' is not in ['IPv4', 'IPv6']."),
        ));
    }
    if let Some(p) = body["protocol"].as_str()
        && protocol_number(p).is_none()
    {
        return Err(invalid(
            "SecurityGroupRuleInvalidProtocol",
            format!("Security group rule protocol {p} not supported."),
        ));
    }
    let (min, max) = (
        body["port_range_min"].as_i64(),
        body["port_range_max"].as_i64(),
    );
    if matches!(
        body["protocol"].as_str(),
        Some("tcp" | "udp" | "sctp" | "6" | "17")
    ) && let (Some(a), Some(b)) = (min, max)
        && (a > b || a < 1 || b > 65535)
    {
        return Err(invalid(
            "SecurityGroupInvalidPortRange",
            "For TCP/UDP protocols, port_range_min must be <= port_range_max",
        ));
    }
    if (min.is_some() || max.is_some()) && body["protocol"].is_null() {
        return Err(invalid(
            "SecurityGroupProtocolRequiredWithPorts",
            "Must also specify protocol if port range is given.",
        ));
    }
    if let Some(prefix) = body["remote_ip_prefix"].as_str().map(str::to_string) {
        let c = Cidr::parse(&prefix, false).or_else(|| {
            Cidr::parse(
                &format!("{prefix}/{}", if prefix.contains(':') { 128 } else { 32 }),
                false,
            )
        });
        let c = c.ok_or_else(|| invalid("InvalidInput", format!("Invalid input for remote_ip_prefix. Reason: '{prefix}' is not a valid IP subnet.")))?;
        if c.v6 != (eth == "IPv6") {
            return Err(invalid(
                "SecurityGroupRuleParameterConflict",
                format!("Conflicting value ethertype {eth} for CIDR {prefix}"),
            ));
        }
        body["normalized_cidr"] = json!(c.to_text());
        if !body["remote_group_id"].is_null() {
            return Err(invalid(
                "SecurityGroupRemoteGroupAndRemoteIpPrefix",
                "Only remote_ip_prefix or remote_group_id may be provided.",
            ));
        }
    }
    Ok(())
}

const RULE_IDENTITY: &[&str] = &[
    "security_group_id",
    "direction",
    "ethertype",
    "protocol",
    "port_range_min",
    "port_range_max",
    "normalized_cidr",
    "remote_group_id",
    "remote_address_group_id",
];

/// One rule (`{"security_group_rule": {...}}`) or Neutron's bulk form
/// (`{"security_group_rules": [...]}`), which is all-or-nothing and limited to one group: every
/// rule is validated (including duplicates within the batch) before any is stored.
async fn create_rule(State(st): State<AppState>, ctx: Ctx, b: Bytes) -> ApiResult {
    let whole = crate::http::body(SVC, &b)?;
    if let Some(items) = whole.get(RULES).and_then(Value::as_array) {
        single_group_and_project(&ctx, items)?;
        let mut w = lock(&st, &ctx);
        let mut batch: Vec<(String, String, Value)> = Vec::new();
        for req in items {
            let (id, owner, body) = build_rule(&w, &ctx, req)?;
            batch.push((id, owner, body));
        }
        // Neutron's `_check_for_duplicate_rules`: duplicates within the request first, then
        // against the stored rules.
        for (i, (_, _, b)) in batch.iter().enumerate() {
            if batch[..i].iter().any(|(_, _, o)| same_rule(o, b)) {
                return Err(ApiError::conflict(
                    SVC,
                    "DuplicateSecurityGroupRuleInPost",
                    "Duplicate Security Group Rule in POST.",
                ));
            }
        }
        for (_, _, b) in &batch {
            check_existing(&w, b)?;
        }
        let out: Vec<Value> = batch.iter().map(|(_, _, b)| b.clone()).collect();
        for (id, owner, body) in batch {
            w.insert(RULES, &id, &owner, body);
        }
        return Ok(crate::http::reply(
            StatusCode::CREATED,
            json!({ RULES: out }),
        ));
    }
    let req = req_member(RULES, &b)?;
    let mut w = lock(&st, &ctx);
    let (id, owner, body) = build_rule(&w, &ctx, &req)?;
    check_existing(&w, &body)?;
    w.insert(RULES, &id, &owner, body.clone());
    created(RULES, body)
}

/// Neutron's `_validate_single_project_and_group` (securitygroups_db.py): a bulk create names one
/// security group and one project, else 400 `SecurityGroupNotSingleGroupRules` /
/// `SecurityGroupRulesNotSingleProject`.
fn single_group_and_project(ctx: &Ctx, items: &[Value]) -> ApiResult<()> {
    let mut groups = std::collections::BTreeSet::new();
    let mut projects = std::collections::BTreeSet::new();
    for req in items {
        groups.insert(req["security_group_id"].to_string());
        if groups.len() > 1 {
            return Err(invalid(
                "SecurityGroupNotSingleGroupRules",
                "Only allowed to update rules for one security profile at a time",
            ));
        }
        let project = match (req["project_id"].as_str(), req["tenant_id"].as_str()) {
            (Some(p), _) | (None, Some(p)) if ctx.admin => p.to_string(),
            _ => ctx.project.clone(),
        };
        projects.insert(project);
        if projects.len() > 1 {
            return Err(invalid(
                "SecurityGroupRulesNotSingleProject",
                "Multiple project_ids in bulk security group rule create not allowed",
            ));
        }
    }
    Ok(())
}

fn same_rule(a: &Value, b: &Value) -> bool {
    RULE_IDENTITY.iter().all(|k| a[*k] == b[*k])
}

/// 409 `SecurityGroupRuleExists` when a stored rule is the same.
fn check_existing(w: &World, body: &Value) -> ApiResult<()> {
    if let Some((rid, _)) = w.iter(RULES).find(|(_, r)| same_rule(&r.body, body)) {
        return Err(ApiError::conflict(
            SVC,
            "SecurityGroupRuleExists",
            format!("Security group rule already exists. Rule id is {rid}."),
        ));
    }
    Ok(())
}

/// Validate one rule request against the world (duplicates are checked by the caller).
fn build_rule(w: &World, ctx: &Ctx, req: &Value) -> ApiResult<(String, String, Value)> {
    let (project, mut body) = new_body(ctx, req, rule_defaults())?;
    let sg = body["security_group_id"].as_str().unwrap_or("").to_string();
    let owner = find(w, ctx, COL, &sg)?.project.clone();
    if !ctx.owns(&owner) {
        return Err(crate::network::not_found(COL, &sg));
    }
    if let Some(rg) = body["remote_group_id"].as_str() {
        find(w, ctx, COL, rg)?;
    }
    validate_rule(&mut body)?;
    check_quota(w, &project, RULES, "security_group_rule")?;
    body["belongs_to_default_sg"] = json!(w.default_sg.get(&owner) == Some(&sg));
    let id = body["id"].as_str().unwrap_or_default().to_string();
    Ok((id, owner, body))
}

fn delete_rule(w: &mut World, ctx: &Ctx, id: &str) -> ApiResult<()> {
    find_owned(w, ctx, RULES, id)?;
    w.remove(RULES, id);
    Ok(())
}

/// Routes.
pub fn routes() -> Router<AppState> {
    resource_routes(
        COL,
        list_route(COL).merge(create_route(COL, create)),
        update_route(COL, &["name", "description", "stateful"]).merge(delete_route(delete)),
    )
    .merge(resource_routes(
        RULES,
        list_route(RULES).post(create_rule),
        delete_route(delete_rule),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_validation() {
        let mut r = json!({"direction": "ingress", "ethertype": "IPv4", "protocol": "tcp", "port_range_min": 22, "port_range_max": 22, "remote_ip_prefix": "10.0.0.1/8", "remote_group_id": null});
        assert!(validate_rule(&mut r).is_ok());
        assert_eq!(r["normalized_cidr"], "10.0.0.0/8");
        let mut bad = json!({"direction": "ingress", "protocol": "tcp", "port_range_min": 23, "port_range_max": 22});
        assert_eq!(
            validate_rule(&mut bad).map_err(|e| e.kind).err(),
            Some("SecurityGroupInvalidPortRange")
        );
        let mut v6 = json!({"direction": "egress", "ethertype": "IPv4", "remote_ip_prefix": "::/0", "remote_group_id": null});
        assert!(validate_rule(&mut v6).is_err());
    }

    #[test]
    fn default_group_has_four_rules() {
        let mut w = World::default();
        ensure_default(&mut w, "p");
        ensure_default(&mut w, "p");
        assert_eq!(w.iter(COL).count(), 1);
        assert_eq!(w.iter(RULES).count(), 4);
    }
}
