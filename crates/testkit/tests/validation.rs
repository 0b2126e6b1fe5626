//! The API server rejects the invalid objects upstream CAPO v0.14.7 rejects, naming the field.
//!
//! One case per validation rule of the upstream CRDs: every `x-kubernetes-validations` (CEL)
//! rule, and the "exactly one of" (`minProperties`/`maxProperties: 1`) parameters such as
//! ImageParam, NetworkParam and their filters. Create-time cases use a server-side dry run;
//! the `region is immutable` transition rules create the object and then change the region.
//!
//! Rules and where they are exercised:
//! - OpenStackCluster spec: bastion floating IP forbidden with disableExternalNetwork
//! - OpenStackCluster spec: disableAPIServerFloatingIP must not be false with disableExternalNetwork
//! - bastion: spec required when enabled
//! - flavor or flavorID: bastion spec, OpenStackMachine, OpenStackMachineTemplate, OpenStackServer
//! - volume availabilityZone: name required for `from: Name` (and the default), forbidden otherwise
//!   (rootVolume and additionalBlockDevices)
//! - scheduler hint value: bool/number/string required for their type and forbidden otherwise
//! - identityRef region immutable: OpenStackCluster, OpenStackMachine, OpenStackFloatingIPPool,
//!   OpenStackServer
//! - exactly one of: image, network, subnet, router, externalNetwork, securityGroups[], serverGroup,
//!   floatingIPNetwork; filters need at least one field

use capo_testkit::{TestEnv, apply_yaml, shared_env};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// Builds an object of one kind from a name and spec fields.
type Build = fn(&str, Value) -> Value;

/// An invalid object, the field the server must name and the message it must give.
struct Case {
    name: &'static str,
    object: Value,
    field: &'static str,
    message: &'static str,
}

fn identity() -> Value {
    json!({"type": "Secret", "name": "cloud-config", "cloudName": "openstack"})
}

fn object(kind: &str, version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/{version}"), "kind": kind, "metadata": {"name": name}, "spec": spec})
}

fn cluster(name: &str, extra: Value) -> Value {
    let mut spec = json!({"identityRef": identity()});
    merge(&mut spec, extra);
    object("OpenStackCluster", "v1beta1", name, spec)
}

fn machine_spec(extra: Value) -> Value {
    let mut spec = json!({"flavor": "m1.small", "image": {"filter": {"name": "ubuntu"}}});
    merge(&mut spec, extra);
    spec
}

fn machine(name: &str, extra: Value) -> Value {
    object("OpenStackMachine", "v1beta1", name, machine_spec(extra))
}

fn server(name: &str, extra: Value) -> Value {
    let mut spec = json!({
        "identityRef": identity(), "flavor": "m1.small", "image": {"id": "3c0e8a71-2d1b-4e2f-9a8b-7c6d5e4f3a21"},
        "sshKeyName": "key", "ports": [{}]
    });
    merge(&mut spec, extra);
    object("OpenStackServer", "v1alpha1", name, spec)
}

fn pool(name: &str, extra: Value) -> Value {
    let mut spec = json!({"identityRef": identity(), "reclaimPolicy": "Delete"});
    merge(&mut spec, extra);
    object("OpenStackFloatingIPPool", "v1alpha1", name, spec)
}

/// Sets every key of `extra` in `base`; a null value removes the key.
fn merge(base: &mut Value, extra: Value) {
    if let (Some(map), Value::Object(extra)) = (base.as_object_mut(), extra) {
        for (k, v) in extra {
            if v.is_null() {
                map.remove(&k);
            } else {
                map.insert(k, v);
            }
        }
    }
}

const FLAVOR: &str = "at least one of flavor or flavorID must be set";
const AZ_NAME: &str = "name is required when from is 'Name' or default";
const AT_MOST_ONE: &str = "must have at most 1 item";
const AT_LEAST_ONE: &str = "should have at least 1 properties";

fn create_cases() -> Vec<Case> {
    let hint = |value: Value| {
        machine(
            "hint",
            json!({"schedulerHintAdditionalProperties": [{"name": "h", "value": value}]}),
        )
    };
    vec![
        Case {
            name: "bastion floating IP with disableExternalNetwork",
            object: cluster(
                "c1",
                json!({"disableExternalNetwork": true, "disableAPIServerFloatingIP": true,
                "bastion": {"enabled": true, "floatingIP": "203.0.113.5", "spec": machine_spec(json!({}))}}),
            ),
            field: "spec",
            message: "bastion floating IP cannot be set when disableExternalNetwork is true",
        },
        Case {
            name: "API server floating IP with disableExternalNetwork",
            object: cluster(
                "c2",
                json!({"disableExternalNetwork": true, "disableAPIServerFloatingIP": false}),
            ),
            field: "spec",
            message: "disableAPIServerFloatingIP cannot be false when disableExternalNetwork is true",
        },
        Case {
            name: "bastion enabled without spec",
            object: cluster("c3", json!({"bastion": {"enabled": true}})),
            field: "spec.bastion",
            message: "spec is required if bastion is enabled",
        },
        Case {
            name: "bastion spec without flavor",
            object: cluster(
                "c4",
                json!({"bastion": {"enabled": true, "spec": machine_spec(json!({"flavor": null}))}}),
            ),
            field: "spec.bastion.spec",
            message: FLAVOR,
        },
        Case {
            name: "machine without flavor",
            object: machine("m1", json!({"flavor": null})),
            field: "spec",
            message: FLAVOR,
        },
        Case {
            name: "machine template without flavor",
            object: object(
                "OpenStackMachineTemplate",
                "v1beta1",
                "t1",
                json!({"template": {"spec": machine_spec(json!({"flavor": null}))}}),
            ),
            field: "spec.template.spec",
            message: FLAVOR,
        },
        Case {
            name: "server without flavor",
            object: server("s1", json!({"flavor": null})),
            field: "spec",
            message: FLAVOR,
        },
        Case {
            name: "root volume AZ from Name without name",
            object: machine(
                "m2",
                json!({"rootVolume": {"sizeGiB": 10, "availabilityZone": {"from": "Name"}}}),
            ),
            field: "spec.rootVolume.availabilityZone",
            message: AZ_NAME,
        },
        Case {
            name: "root volume AZ from Machine with a name",
            object: machine(
                "m3",
                json!({"rootVolume": {"sizeGiB": 10, "availabilityZone": {"from": "Machine", "name": "az1"}}}),
            ),
            field: "spec.rootVolume.availabilityZone",
            message: AZ_NAME,
        },
        Case {
            name: "block device AZ defaulting to Name without name",
            object: machine(
                "m4",
                json!({"additionalBlockDevices": [{"name": "etcd", "sizeGiB": 1,
                "storage": {"type": "Volume", "volume": {"availabilityZone": {}}}}]}),
            ),
            field: "spec.additionalBlockDevices[0].storage.volume.availabilityZone",
            message: AZ_NAME,
        },
        Case {
            name: "scheduler hint Bool without bool",
            object: hint(json!({"type": "Bool"})),
            field: "spec.schedulerHintAdditionalProperties[0].value",
            message: "bool is required when type is Bool, and forbidden otherwise",
        },
        Case {
            name: "scheduler hint Number without number",
            object: hint(json!({"type": "Number"})),
            field: "spec.schedulerHintAdditionalProperties[0].value",
            message: "number is required when type is Number, and forbidden otherwise",
        },
        Case {
            name: "scheduler hint Bool with a string as well",
            object: hint(json!({"type": "Bool", "bool": true, "string": "x"})),
            field: "spec.schedulerHintAdditionalProperties[0].value",
            message: "string is required when type is String, and forbidden otherwise",
        },
        Case {
            name: "image with id and filter",
            object: machine(
                "m5",
                json!({"image": {"id": "3c0e8a71-2d1b-4e2f-9a8b-7c6d5e4f3a21", "filter": {"name": "x"}}}),
            ),
            field: "spec.image",
            message: AT_MOST_ONE,
        },
        Case {
            name: "image empty",
            object: machine("m6", json!({"image": {}})),
            field: "spec.image",
            message: AT_LEAST_ONE,
        },
        Case {
            name: "image filter empty",
            object: machine("m7", json!({"image": {"filter": {}}})),
            field: "spec.image.filter",
            message: AT_LEAST_ONE,
        },
        Case {
            name: "port network with id and filter",
            object: machine(
                "m8",
                json!({"ports": [{"network": {"id": "0686143b-f0a7-481a-86f5-cc1f8ccde692", "filter": {"name": "n"}}}]}),
            ),
            field: "spec.ports[0].network",
            message: AT_MOST_ONE,
        },
        Case {
            name: "fixed IP subnet empty",
            object: machine("m9", json!({"ports": [{"fixedIPs": [{"subnet": {}}]}]})),
            field: "spec.ports[0].fixedIPs[0].subnet",
            message: AT_LEAST_ONE,
        },
        Case {
            name: "security group empty",
            object: machine("m10", json!({"securityGroups": [{}]})),
            field: "spec.securityGroups[0]",
            message: AT_LEAST_ONE,
        },
        Case {
            name: "server group with id and filter",
            object: machine(
                "m11",
                json!({"serverGroup": {"id": "9f8e7d6c-5b4a-4321-8765-43210fedcba9", "filter": {"name": "g"}}}),
            ),
            field: "spec.serverGroup",
            message: AT_MOST_ONE,
        },
        Case {
            name: "cluster network empty",
            object: cluster("c5", json!({"network": {}})),
            field: "spec.network",
            message: AT_LEAST_ONE,
        },
        Case {
            name: "cluster external network with id and filter",
            object: cluster(
                "c6",
                json!({"externalNetwork": {"id": "5f5e4b2c-8a53-4f4e-9a52-2f7d3c0c1a11", "filter": {"name": "public"}}}),
            ),
            field: "spec.externalNetwork",
            message: AT_MOST_ONE,
        },
        Case {
            name: "cluster router filter empty",
            object: cluster("c7", json!({"router": {"filter": {}}})),
            field: "spec.router.filter",
            message: AT_LEAST_ONE,
        },
        Case {
            name: "cluster subnet empty",
            object: cluster("c8", json!({"subnets": [{}]})),
            field: "spec.subnets[0]",
            message: AT_LEAST_ONE,
        },
        Case {
            name: "floating IP pool network empty",
            object: pool("p1", json!({"floatingIPNetwork": {}})),
            field: "spec.floatingIPNetwork",
            message: AT_LEAST_ONE,
        },
    ]
}

/// True when `message` reports `field` itself (not just a longer path starting with it).
fn names_field(message: &str, field: &str) -> bool {
    [": ", "[", ", "]
        .iter()
        .any(|prefix| message.contains(&format!("{prefix}{field}: ")))
}

async fn expect_rejected(
    env: &TestEnv,
    ns: &str,
    case: &Case,
    dry_run: bool,
) -> Result<Option<String>, Box<dyn std::error::Error>> {
    let yaml = serde_json::to_string(&case.object)?;
    Ok(match apply_yaml(&env.client(), ns, &yaml, dry_run).await? {
        Ok(_) => Some(format!("{}: accepted", case.name)),
        Err(rejected)
            if names_field(&rejected.message, case.field)
                && rejected.message.contains(case.message) =>
        {
            None
        }
        Err(rejected) => Some(format!(
            "{}: expected `{}: ... {}`, got: {}",
            case.name, case.field, case.message, rejected.message
        )),
    })
}

#[tokio::test]
async fn invalid_objects_are_rejected_naming_the_field() -> TestResult {
    let env = shared_env().await?;
    let _logs = env.logs_on_failure();
    let ns = env.new_namespace("cel").await?;
    let cases = create_cases();
    let mut failures = Vec::new();
    for case in &cases {
        failures.extend(expect_rejected(env, &ns, case, true).await?);
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    Ok(())
}

#[tokio::test]
async fn the_valid_base_objects_are_accepted() -> TestResult {
    // Guards the cases above: each must fail for its own rule, not because the base is invalid.
    let env = shared_env().await?;
    let ns = env.new_namespace("cel-base").await?;
    let bases = [
        cluster("base-cluster", json!({})),
        machine("base-machine", json!({})),
        server("base-server", json!({})),
        pool("base-pool", json!({})),
        object(
            "OpenStackMachineTemplate",
            "v1beta1",
            "base-template",
            json!({"template": {"spec": machine_spec(json!({}))}}),
        ),
    ];
    for base in bases {
        let verdict = apply_yaml(&env.client(), &ns, &serde_json::to_string(&base)?, true).await?;
        assert!(verdict.is_ok(), "base object rejected: {verdict:?}");
    }
    Ok(())
}

#[tokio::test]
async fn identity_region_is_immutable() -> TestResult {
    let env = shared_env().await?;
    let _logs = env.logs_on_failure();
    let ns = env.new_namespace("cel-region").await?;
    let with_region = |region: &str| {
        let mut id = identity();
        merge(&mut id, json!({"region": region}));
        json!({"identityRef": id})
    };
    let kinds: [(&str, Build); 4] = [
        ("OpenStackCluster", cluster),
        ("OpenStackMachine", machine),
        ("OpenStackServer", server),
        ("OpenStackFloatingIPPool", pool),
    ];
    let mut failures = Vec::new();
    for (kind, build) in kinds {
        let created = build("regional", with_region("RegionOne"));
        let verdict =
            apply_yaml(&env.client(), &ns, &serde_json::to_string(&created)?, false).await?;
        assert!(
            verdict.is_ok(),
            "{kind}: creating the object failed: {verdict:?}"
        );
        let case = Case {
            name: kind,
            object: build("regional", with_region("RegionTwo")),
            field: "spec.identityRef",
            message: "region is immutable",
        };
        failures.extend(expect_rejected(env, &ns, &case, false).await?);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
