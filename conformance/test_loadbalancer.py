"""Octavia: a load balancer with listener, pool, member and health monitor, each waited to ACTIVE, then
a cascade delete — with the SDK and with the CLI (python-octaviaclient)."""

import os

import openstack.exceptions
import pytest

from simctl import WAIT_SECONDS, poll

REAL = os.environ.get("CAPO_CONFORMANCE_CLOUD", "sim") == "real"
# Octavia with no-op amphorae takes 6-13 s to build a load balancer, up to 70 s on a loaded
# machine; the sim 0.5 s.
LB_WAIT = max(WAIT_SECONDS, 300)
# No health manager in hack/openstack-env.sh: a real load balancer stays OFFLINE there.
ONLINE = ("ONLINE", "OFFLINE") if REAL else ("ONLINE",)


def _subnet(conn, name: str, cidr: str):
    net = conn.network.create_network(name=f"{name}-net")
    subnet = conn.network.create_subnet(
        network_id=net.id, ip_version=4, cidr=cidr, name=f"{name}-subnet"
    )
    return net, subnet


def _wait_lb(conn, lb_id):
    return conn.load_balancer.wait_for_load_balancer(
        lb_id, status="ACTIVE", failures=["ERROR"], wait=LB_WAIT
    )


def test_load_balancer_sdk(sim, conn, project_id):
    net, subnet = _subnet(conn, "sdk-lb", "10.60.0.0/24")
    lb = conn.load_balancer.create_load_balancer(name="sdk-lb", vip_subnet_id=subnet.id)
    assert lb.provisioning_status == "PENDING_CREATE"
    lb = _wait_lb(conn, lb.id)
    assert lb.provisioning_status == "ACTIVE" and lb.operating_status in ONLINE
    assert lb.vip_subnet_id == subnet.id and lb.vip_network_id == net.id
    assert lb.vip_address.startswith("10.60.0.")
    vip_port = conn.network.get_port(lb.vip_port_id)
    assert [ip["ip_address"] for ip in vip_port.fixed_ips] == [lb.vip_address]

    # Slow the PENDING_UPDATE phase down (control API) so the immutability check below does not race
    # the simulator's default delay on a loaded machine.
    delays = sim.control("GET", "/_sim/delays")
    sim.control("PUT", "/_sim/delays", {**delays, "lb_update_ms": 3000})
    listener = conn.load_balancer.create_listener(
        name="sdk-listener", loadbalancer_id=lb.id, protocol="HTTP", protocol_port=80
    )
    sim.control("PUT", "/_sim/delays", delays)
    # While the listener is being created the LB is immutable. (Real Octavia may finish the
    # listener within 0.4 s, before the next request: then the second listener is created and
    # removed again.)
    if not REAL:
        assert conn.load_balancer.get_load_balancer(lb.id).provisioning_status == "PENDING_UPDATE"
    try:
        early = conn.load_balancer.create_listener(
            name="too-early", loadbalancer_id=lb.id, protocol="HTTP", protocol_port=81
        )
    except openstack.exceptions.ConflictException:
        pass
    else:
        assert REAL, "a listener was created while the load balancer was PENDING_UPDATE"
        _wait_lb(conn, lb.id)
        conn.load_balancer.delete_listener(early)
    _wait_lb(conn, lb.id)
    listener = conn.load_balancer.get_listener(listener.id)
    assert listener.provisioning_status == "ACTIVE" and listener.protocol_port == 80

    pool = conn.load_balancer.create_pool(
        name="sdk-pool", listener_id=listener.id, protocol="HTTP", lb_algorithm="ROUND_ROBIN"
    )
    _wait_lb(conn, lb.id)
    member = conn.load_balancer.create_member(
        pool, address="10.60.0.20", protocol_port=8080, subnet_id=subnet.id, name="sdk-member"
    )
    _wait_lb(conn, lb.id)
    monitor = conn.load_balancer.create_health_monitor(
        pool_id=pool.id, type="HTTP", delay=5, timeout=3, max_retries=3, url_path="/healthz"
    )
    lb = _wait_lb(conn, lb.id)

    pool = conn.load_balancer.get_pool(pool.id)
    assert pool.provisioning_status == "ACTIVE" and pool.health_monitor_id == monitor.id
    assert [m["id"] for m in pool.members] == [member.id]
    member = conn.load_balancer.get_member(member, pool)
    assert member.provisioning_status == "ACTIVE" and member.address == "10.60.0.20"
    assert member.protocol_port == 8080
    monitor = conn.load_balancer.get_health_monitor(monitor.id)
    assert monitor.provisioning_status == "ACTIVE" and monitor.url_path == "/healthz"
    assert [lis["id"] for lis in lb.listeners] == [listener.id]
    assert [p["id"] for p in lb.pools] == [pool.id]

    conn.load_balancer.delete_load_balancer(lb, cascade=True)
    conn.load_balancer.wait_for_delete(lb, wait=LB_WAIT)
    with pytest.raises(openstack.exceptions.NotFoundException):
        conn.load_balancer.get_listener(listener.id)
    with pytest.raises(openstack.exceptions.NotFoundException):
        conn.network.get_port(lb.vip_port_id)
    conn.network.delete_subnet(subnet)
    conn.network.delete_network(net)
    assert sim.leftovers(project_id) == {}


def test_load_balancer_cli(sim, cli, conn, project_id):
    net, subnet = _subnet(conn, "cli-lb", "10.70.0.0/24")
    lb = cli.json("loadbalancer", "create", "--name", "cli-lb", "--vip-subnet-id", subnet.id,
                  "--wait")
    assert lb["provisioning_status"] == "ACTIVE" and lb["vip_subnet_id"] == subnet.id
    assert lb["vip_address"].startswith("10.70.0.")

    listener = cli.json("loadbalancer", "listener", "create", "--name", "cli-listener",
                        "--protocol", "TCP", "--protocol-port", "6443", "--wait", "cli-lb")
    assert listener["provisioning_status"] == "ACTIVE" and listener["protocol_port"] == 6443
    pool = cli.json("loadbalancer", "pool", "create", "--name", "cli-pool", "--listener",
                    "cli-listener", "--protocol", "TCP", "--lb-algorithm", "ROUND_ROBIN",
                    "--wait")
    assert pool["provisioning_status"] == "ACTIVE"
    member = cli.json("loadbalancer", "member", "create", "--name", "cli-member", "--address",
                      "10.70.0.20", "--protocol-port", "6443", "--subnet-id", subnet.id,
                      "--wait", "cli-pool")
    assert member["provisioning_status"] == "ACTIVE" and member["address"] == "10.70.0.20"
    monitor = cli.json("loadbalancer", "healthmonitor", "create", "--name", "cli-hm",
                       "--delay", "5", "--timeout", "3", "--max-retries", "3", "--type", "TCP",
                       "--wait", "cli-pool")
    assert monitor["provisioning_status"] == "ACTIVE" and monitor["type"] == "TCP"

    shown = cli.json("loadbalancer", "show", "cli-lb")
    assert shown["provisioning_status"] == "ACTIVE"
    # octaviaclient passes Octavia's `[{"id": ...}]` references through unchanged.
    assert shown["listeners"] == [{"id": listener["id"]}]
    assert shown["pools"] == [{"id": pool["id"]}]
    members = cli.json("loadbalancer", "member", "list", "cli-pool")
    assert [m["id"] for m in members] == [member["id"]]
    lbs = cli.json("loadbalancer", "list", "--name", "cli-lb")
    assert [(x["id"], x["provisioning_status"]) for x in lbs] == [(lb["id"], "ACTIVE")]

    cli.ok("loadbalancer", "delete", "--cascade", "--wait", "cli-lb")
    poll(lambda: cli.json("loadbalancer", "list"), lambda x: x == [], "load balancer gone")
    assert cli.json("loadbalancer", "listener", "list") == []
    conn.network.delete_subnet(subnet)
    conn.network.delete_network(net)
    assert sim.leftovers(project_id) == {}
