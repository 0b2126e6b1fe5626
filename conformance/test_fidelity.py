"""Fidelity to the real services: behaviours where capo-sim once agreed with capo's own client but not
with Neutron 29 / Octavia / Nova, driven with the official clients. Each test holds against the real
services too (CAPO_CONFORMANCE_CLOUD=real); parts that need the simulator's control API skip there.
See "Fidelity to the real services" in crates/sim/README.md."""

import os
import uuid

import openstack.exceptions
import pytest

from simctl import WAIT_SECONDS, poll

REAL = os.environ.get("CAPO_CONFORMANCE_CLOUD", "sim") == "real"
# Octavia with no-op amphorae: 6-13 s to ACTIVE, up to 70 s on a loaded machine.
LB_WAIT = max(WAIT_SECONDS, 300)


def _raw(proxy, method, path, **kw):
    """A request through an SDK proxy that returns the response whatever its status."""
    return getattr(proxy, method)(path, raise_exc=False, **kw)


def _neutron_error(resp):
    return resp.json()["NeutronError"]


def _routed_port(conn, ext_net, name, cidr):
    net = conn.network.create_network(name=f"{name}-net")
    subnet = conn.network.create_subnet(network_id=net.id, ip_version=4, cidr=cidr)
    router = conn.network.create_router(
        name=f"{name}-router", external_gateway_info={"network_id": ext_net.id}
    )
    conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    port = conn.network.create_port(network_id=net.id, name=f"{name}-port")
    return net, subnet, router, port


# --- 1. tags in create bodies -------------------------------------------------------------------


def test_tags_not_allowed_in_post_sdk(conn, ext_net):
    """The SDK puts `tags` into the body when given at create: Neutron refuses it (but for ports)."""
    with pytest.raises(openstack.exceptions.BadRequestException) as e:
        conn.network.create_network(name="fid-tagged", tags=["capo-cluster=u"])
    assert "Attribute 'tags' not allowed in POST" in str(e.value)
    net = conn.network.create_network(name="fid-net")
    for create in (
        lambda: conn.network.create_subnet(
            network_id=net.id, ip_version=4, cidr="10.71.0.0/24", tags=["t"]
        ),
        lambda: conn.network.create_router(name="fid-r", tags=["t"]),
        lambda: conn.network.create_security_group(name="fid-sg", tags=["t"]),
        lambda: conn.network.create_ip(floating_network_id=ext_net.id, tags=["t"]),
    ):
        with pytest.raises(openstack.exceptions.BadRequestException) as e:
            create()
        assert "Attribute 'tags' not allowed in POST" in str(e.value)
    assert [n.name for n in conn.network.networks(name="fid-tagged")] == []

    # The exact body.
    resp = _raw(conn.network, "post", "/networks", json={"network": {"name": "x", "tags": ["t"]}})
    assert resp.status_code == 400
    assert _neutron_error(resp) == {
        "type": "HTTPBadRequest",
        "message": "Attribute 'tags' not allowed in POST",
        "detail": "",
    }

    # Ports accept tags in the POST, single and bulk; without the ML2 extension driver
    # tag_ports_during_bulk_creation (the default, not listed in /extensions) they are dropped.
    aliases = {x.alias for x in conn.network.extensions()}
    port = conn.network.create_port(network_id=net.id, name="fid-port", tags=["a", "b"])
    bulk = list(conn.network.create_ports([
        {"network_id": net.id, "name": "fid-bulk-1", "tags": ["x"]},
        {"network_id": net.id, "name": "fid-bulk-2"},
    ]))
    if "tag-ports-during-bulk-creation" in aliases:
        assert sorted(port.tags) == ["a", "b"]
        assert [p.tags for p in bulk] == [["x"], []]
        assert [p.name for p in conn.network.ports(tags="x")] == ["fid-bulk-1"]
    else:
        assert port.tags == [] and conn.network.get_port(port.id).tags == []
        assert [p.tags for p in bulk] == [[], []]
        assert list(conn.network.ports(tags="x")) == []
    # Invalid tags are refused all the same.
    resp = _raw(conn.network, "post", "/ports",
                json={"port": {"network_id": net.id, "tags": ["d", "d"]}})
    assert resp.status_code == 400
    assert _neutron_error(resp) == {
        "type": "HTTPBadRequest",
        "message": "Invalid input for tags. Reason: Duplicate items in the list: 'd'.",
        "detail": "",
    }
    # So capo tags ports after the create.
    conn.network.set_tags(port, ["a", "b"])
    assert sorted(conn.network.get_port(port.id).tags) == ["a", "b"]

    # Tags through the sub-resource: PUT /tags (200), PUT /tags/{tag} (201), POST /tags (200).
    conn.network.set_tags(net, ["a", "b"])
    conn.network.add_tag(net, "c")
    assert sorted(conn.network.get_network(net.id).tags) == ["a", "b", "c"]
    resp = _raw(conn.network, "put", f"/networks/{net.id}/tags", json={"tags": ["a"]})
    assert (resp.status_code, resp.json()) == (200, {"tags": ["a"]})
    resp = _raw(conn.network, "put", f"/networks/{net.id}/tags/d")
    assert (resp.status_code, resp.content) == (201, b"null")
    resp = _raw(conn.network, "post", f"/networks/{net.id}/tags", json={"tags": ["d", "e"]})
    assert resp.status_code == 200
    assert sorted(conn.network.get_network(net.id).tags) == ["a", "d", "e"]

    assert {"standard-attr-tag", "tag-creation"} <= aliases
    resp = _raw(conn.network, "put", f"/networks/{net.id}/tags", json={"tags": "notalist"})
    assert (resp.status_code, _neutron_error(resp)) == (400, {
        "type": "InvalidInput",
        "message": "Invalid input for operation: 'notalist' is not a list.",
        "detail": "",
    })


def test_tags_at_create_cli(cli):
    """The CLI sets network tags after the create, and port tags too unless
    tag-ports-during-bulk-creation is advertised (then it puts them in the POST): both work."""
    cli.ok("network", "create", "--tag", "x", "--tag", "y", "fid-cli-net")
    assert sorted(cli.json("network", "show", "fid-cli-net")["tags"]) == ["x", "y"]
    port = cli.json("port", "create", "--network", "fid-cli-net", "--tag", "p", "fid-cli-port")
    assert port["tags"] == ["p"]
    assert [p["Name"] for p in cli.json("port", "list", "--tags", "p")] == ["fid-cli-port"]


# --- 2. bulk security group rules ---------------------------------------------------------------


def test_bulk_rules_one_group_sdk(conn):
    g1 = conn.network.create_security_group(name="fid-g1")
    g2 = conn.network.create_security_group(name="fid-g2")

    def rule(sg, port):
        return {"security_group_id": sg.id, "direction": "ingress", "ethertype": "IPv4",
                "protocol": "tcp", "port_range_min": port, "port_range_max": port}

    with pytest.raises(openstack.exceptions.BadRequestException) as e:
        list(conn.network.create_security_group_rules([rule(g1, 22), rule(g2, 22)]))
    assert "Only allowed to update rules for one security profile at a time" in str(e.value)
    for g in (g1, g2):
        assert [r for r in conn.network.security_group_rules(security_group_id=g.id)
                if r.direction == "ingress"] == []
    resp = _raw(conn.network, "post", "/security-group-rules",
                json={"security_group_rules": [rule(g1, 22), rule(g2, 22)]})
    assert resp.status_code == 400
    assert _neutron_error(resp)["type"] == "SecurityGroupNotSingleGroupRules"

    made = list(conn.network.create_security_group_rules([rule(g1, 22), rule(g1, 80)]))
    assert sorted(r.port_range_min for r in made) == [22, 80]


# --- 3. floating IP update without port_id ------------------------------------------------------


def test_floating_ip_update_without_port_id(conn, ext_net):
    _, _, router, port = _routed_port(conn, ext_net, "fid-fip", "10.72.0.0/24")
    fip = conn.network.create_ip(floating_network_id=ext_net.id, port_id=port.id)
    assert fip.port_id == port.id and fip.router_id == router.id
    # A non-empty body without port_id keeps the association.
    fip = conn.network.update_ip(fip, description="kept")
    assert fip.port_id == port.id and fip.description == "kept"
    # An empty body disassociates (Neutron's _check_and_get_fip_assoc).
    resp = _raw(conn.network, "put", f"/floatingips/{fip.id}", json={"floatingip": {}})
    assert resp.status_code == 200
    body = resp.json()["floatingip"]
    assert (body["port_id"], body["fixed_ip_address"], body["router_id"]) == (None, None, None)
    fip = conn.network.get_ip(fip.id)
    assert fip.port_id is None and fip.description == "kept"
    # Re-associate; port_id: null (SDK) disassociates too.
    fip = conn.network.update_ip(fip, port_id=port.id)
    assert fip.port_id == port.id
    fip = conn.network.update_ip(fip, port_id=None)
    assert fip.port_id is None and fip.fixed_ip_address is None


def test_floating_ip_status(sim, conn, ext_net):
    """Sim: DOWN when unassociated, ACTIVE when associated (real agents may lag; checked by polling)."""
    _, _, _, port = _routed_port(conn, ext_net, "fid-fst", "10.73.0.0/24")
    fip = conn.network.create_ip(floating_network_id=ext_net.id)
    assert fip.status == "DOWN"
    conn.network.update_ip(fip, port_id=port.id)
    poll(lambda: conn.network.get_ip(fip.id).status, lambda s: s == "ACTIVE", "FIP ACTIVE")
    conn.network.update_ip(fip, port_id=None)
    poll(lambda: conn.network.get_ip(fip.id).status, lambda s: s == "DOWN", "FIP DOWN")


# --- 4. filter validation -----------------------------------------------------------------------


def test_unknown_filter_is_refused(conn, cli):
    assert "filter-validation" in {x.alias for x in conn.network.extensions()}
    resp = _raw(conn.network, "get", "/ports?no_such_attribute=x")
    assert resp.status_code == 400
    assert _neutron_error(resp) == {
        "type": "HTTPBadRequest",
        "message": "['no_such_attribute'] is invalid attribute for filtering",
        "detail": "",
    }
    # What the official clients send is accepted.
    conn.network.create_network(name="fid-flt")
    assert [n.name for n in conn.network.networks(name="fid-flt", is_admin_state_up=True,
                                                    is_shared=False)] == ["fid-flt"]
    assert list(conn.network.ports(device_owner="compute:nova", fixed_ips=["ip_address=10.0.0.1"])) == []
    cli.json("network", "list", "--long", "--internal", "--enable")
    cli.json("port", "list", "--long", "--device-owner", "network:dhcp")
    cli.json("security", "group", "rule", "list", "--ingress", "--protocol", "tcp")
    cli.json("floating", "ip", "list", "--status", "DOWN")


@pytest.mark.parametrize("query,kind,message", [
    ("sort_key=nonexistent", "HTTPBadRequest", "The number of sort_keys and sort_dirs must be same"),
    ("sort_key=nonexistent&sort_dir=asc", "HTTPBadRequest",
     "['nonexistent'] is invalid attribute for sort_keys"),
    ("sort_dir=sideways&sort_key=name", "HTTPBadRequest",
     "['sideways'] is invalid value for sort_dirs, valid value is 'asc' and 'desc'"),
    ("limit=-1", "BadRequest",
     "Bad limit request: Limit must be an integer 0 or greater and not '-1'."),
    ("limit=abc", "BadRequest",
     "Bad limit request: Limit must be an integer 0 or greater and not 'abc'."),
    ("fixed_ips=bogus", "InvalidInput",
     "Invalid input for operation: 'bogus' is not of the form <key>=[value]."),
    ("admin_state_up=maybe", "InvalidInput",
     "Invalid input for operation: 'maybe' cannot be converted to boolean."),
    ("created_at=2020", "HTTPBadRequest", "['created_at'] is invalid attribute for filtering"),
])
def test_neutron_refuses_bad_list_queries(conn, query, kind, message):
    resp = _raw(conn.network, "get", f"/ports?{query}")
    assert (resp.status_code, _neutron_error(resp)) == (
        400, {"type": kind, "message": message, "detail": ""}
    )


# --- 5. Octavia while PENDING_* -----------------------------------------------------------------


def test_load_balancer_immutable_while_pending(sim, conn):
    net = conn.network.create_network(name="fid-lb-net")
    subnet = conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.74.0.0/24")
    delays = sim.control("GET", "/_sim/delays")
    sim.control("PUT", "/_sim/delays", {**delays, "lb_provision_ms": 3000})
    lb = conn.load_balancer.create_load_balancer(name="fid-lb", vip_subnet_id=subnet.id)
    sim.control("PUT", "/_sim/delays", delays)
    assert lb.provisioning_status == "PENDING_CREATE"
    # PUT/DELETE of the load balancer: "Invalid state"; creating a child: "immutable".
    invalid = f"Invalid state PENDING_CREATE of loadbalancer resource {lb.id}"
    immutable = f"Load Balancer {lb.id} is immutable and cannot be updated."
    for attempt, message in (
        (lambda: conn.load_balancer.update_load_balancer(lb, description="x"), invalid),
        (lambda: conn.load_balancer.delete_load_balancer(lb), invalid),
        (lambda: conn.load_balancer.create_listener(
            loadbalancer_id=lb.id, protocol="TCP", protocol_port=6443), immutable),
    ):
        with pytest.raises(openstack.exceptions.ConflictException) as e:
            attempt()
        assert message in str(e.value)
    resp = _raw(conn.load_balancer, "put", f"/lbaas/loadbalancers/{lb.id}",
                json={"loadbalancer": {"name": "y"}})
    assert (resp.status_code, resp.json()) == (
        409, {"faultcode": "Client", "faultstring": invalid, "debuginfo": None}
    )
    conn.load_balancer.wait_for_load_balancer(lb.id, status="ACTIVE", wait=LB_WAIT)
    # With a child and without cascade: 400 (children are checked before the state).
    listener = conn.load_balancer.create_listener(loadbalancer_id=lb.id, protocol="TCP",
                                                  protocol_port=6443)
    resp = _raw(conn.load_balancer, "delete", f"/lbaas/loadbalancers/{lb.id}")
    assert (resp.status_code, resp.json()) == (400, {
        "faultcode": "Client",
        "faultstring": f"Validation failure: Cannot delete Load Balancer {lb.id} - it has children",
        "debuginfo": None,
    })
    conn.load_balancer.wait_for_load_balancer(lb.id, status="ACTIVE", wait=LB_WAIT)
    # A full page links a next page, even when it is empty.
    resp = _raw(conn.load_balancer, "get", "/lbaas/loadbalancers?limit=1&name=fid-lb")
    links = resp.json()["loadbalancers_links"]
    assert [l["rel"] for l in links] == ["next"] and f"marker={lb.id}" in links[0]["href"]
    # Unknown VIP subnet: Octavia's own 400.
    missing = str(uuid.uuid4())
    resp = _raw(conn.load_balancer, "post", "/lbaas/loadbalancers",
                json={"loadbalancer": {"name": "fid-bad", "vip_subnet_id": missing}})
    assert (resp.status_code, resp.json()) == (400, {
        "faultcode": "Client", "faultstring": f"Subnet {missing} not found.", "debuginfo": None
    })
    assert listener.id
    conn.load_balancer.delete_load_balancer(lb, cascade=True)
    conn.load_balancer.wait_for_delete(conn.load_balancer.get_load_balancer(lb.id),
                                       wait=LB_WAIT)


# --- 6. pagination, Nova errors -----------------------------------------------------------------


def test_neutron_pagination_links(conn):
    ids = sorted(conn.network.create_network(name=f"fid-pg{i}").id for i in range(3))
    q = "name=fid-pg0&name=fid-pg1&name=fid-pg2&sort_key=id&sort_dir=asc"
    first = _raw(conn.network, "get", f"/networks?{q}&limit=2").json()
    assert [n["id"] for n in first["networks"]] == ids[:2]
    assert [l["rel"] for l in first["networks_links"]] == ["next", "previous"]
    # The SDK follows next links until a page is short.
    assert sorted(n.id for n in conn.network.networks(name=[f"fid-pg{i}" for i in range(3)],
                                                       limit=1)) == ids


def test_nova_create_errors(sim, conn, image, flavor):
    net = conn.network.create_network(name="fid-nova-net")
    conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.75.0.0/24")
    with pytest.raises(openstack.exceptions.BadRequestException) as e:
        conn.compute.create_server(name="x", flavor_id="no-such-flavor", image_id=image.id,
                                   networks=[{"uuid": net.id}])
    assert "Flavor no-such-flavor could not be found." in str(e.value)
    resp = _raw(conn.compute, "post", "/servers", json={"server": {
        "name": "x", "flavorRef": flavor.id, "imageRef": "no-such-image",
        "networks": [{"uuid": net.id}]}})
    assert (resp.status_code, resp.json()) == (400, {"badRequest": {"code": 400, "message": (
        "Invalid input for field/attribute imageRef. Value: no-such-image. "
        "'no-such-image' is not valid under any of the given schemas")}})
    resp = _raw(conn.compute, "post", "/servers", json={"server": {
        "name": "x", "flavorRef": flavor.id, "imageRef": str(uuid.uuid4()),
        "networks": [{"uuid": net.id}]}})
    assert (resp.status_code, resp.json()) == (
        400, {"badRequest": {"code": 400, "message": "Can not find requested image"}}
    )
    missing = str(uuid.uuid4())
    resp = _raw(conn.compute, "post", "/servers", json={"server": {
        "name": "x", "flavorRef": flavor.id, "imageRef": image.id,
        "networks": [{"uuid": missing}]}})
    assert (resp.status_code, resp.json()) == (
        400, {"badRequest": {"code": 400, "message": f"Network {missing} could not be found."}}
    )
    # NoValidHost (armed through the control API; skipped on real services).
    sim.control("POST", "/_sim/build-failures", {"name_regex": "^fid-doomed$", "count": 1})
    server = conn.compute.create_server(name="fid-doomed", flavor_id=flavor.id, image_id=image.id,
                                        networks=[{"uuid": net.id}])
    server = poll(lambda: conn.compute.get_server(server.id), lambda s: s.status == "ERROR",
                  "server ERROR")
    assert server.fault["code"] == 500
    assert server.fault["message"].startswith("No valid host was found.")
    assert "details" not in server.fault  # shown to admins only
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=WAIT_SECONDS)


def test_nova_servers_links(sim, conn, image, flavor):
    net = conn.network.create_network(name="fid-pgs-net")
    conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.76.0.0/24")
    ids = {conn.compute.create_server(name=f"fid-pgs{i}", flavor_id=flavor.id, image_id=image.id,
                                      networks=[{"uuid": net.id}]).id for i in range(2)}
    # Real Nova pages inconsistently while servers are BUILDing (a server can repeat across
    # pages and the SDK then stops with "Endless pagination loop detected"): wait for ACTIVE.
    for sid in ids:
        conn.compute.wait_for_server(conn.compute.get_server(sid), status="ACTIVE",
                                     failures=["ERROR"], wait=WAIT_SECONDS)
    page = _raw(conn.compute, "get", "/servers/detail?limit=2").json()
    assert len(page["servers"]) == 2
    assert page["servers_links"][0]["rel"] == "next"
    assert "marker=" in page["servers_links"][0]["href"]
    assert {s.id for s in conn.compute.servers(limit=1)} == ids
    for sid in ids:
        conn.compute.delete_server(sid)
