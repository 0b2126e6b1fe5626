"""Neutron: networks, subnets, routers with gateway and interfaces, security groups and rules, ports
with fixed IPs and allowed address pairs, floating IPs — created, checked and deleted with the SDK and
with the CLI, then the project must be empty."""

import ipaddress

import openstack.exceptions
import pytest


def _in(addr: str, cidr: str) -> bool:
    return ipaddress.ip_address(addr) in ipaddress.ip_network(cidr)


def _is_external(addr: str, subnet_id: str, ext_net) -> bool:
    """An address on the external network. Its subnet is owned by the cloud admin and (as in real
    Neutron) not readable by the project, so check membership by subnet id instead of CIDR."""
    ipaddress.ip_address(addr)
    return subnet_id in ext_net.subnet_ids


def test_network_stack_sdk(sim, conn, project_id, ext_net):
    net = conn.network.create_network(name="sdk-net")
    assert net.status == "ACTIVE" and net.project_id == project_id and not net.is_router_external
    subnet = conn.network.create_subnet(
        network_id=net.id, ip_version=4, cidr="10.10.0.0/24", name="sdk-subnet",
        dns_nameservers=["8.8.8.8"],
    )
    assert subnet.cidr == "10.10.0.0/24" and subnet.gateway_ip == "10.10.0.1"
    assert subnet.allocation_pools == [{"start": "10.10.0.2", "end": "10.10.0.254"}]
    assert conn.network.get_network(net.id).subnet_ids == [subnet.id]

    router = conn.network.create_router(
        name="sdk-router", external_gateway_info={"network_id": ext_net.id}
    )
    gw = router.external_gateway_info
    assert gw["network_id"] == ext_net.id
    assert len(gw["external_fixed_ips"]) == 1
    gw_ip = gw["external_fixed_ips"][0]
    assert _is_external(gw_ip["ip_address"], gw_ip["subnet_id"], ext_net)
    iface = conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    assert iface["subnet_id"] == subnet.id and iface["port_id"]
    rport = conn.network.get_port(iface["port_id"])
    assert rport.device_id == router.id
    assert rport.device_owner == "network:router_interface"
    assert rport.fixed_ips == [{"subnet_id": subnet.id, "ip_address": "10.10.0.1"}]

    sg = conn.network.create_security_group(name="sdk-sg", description="conformance")
    egress = [r for r in sg.security_group_rules if r["direction"] == "egress"]
    assert sorted(r["ethertype"] for r in egress) == ["IPv4", "IPv6"]
    rule = conn.network.create_security_group_rule(
        security_group_id=sg.id, direction="ingress", ethertype="IPv4", protocol="tcp",
        port_range_min=22, port_range_max=22, remote_ip_prefix="0.0.0.0/0",
    )
    assert (rule.protocol, rule.port_range_min, rule.port_range_max) == ("tcp", 22, 22)
    assert len(conn.network.get_security_group(sg.id).security_group_rules) == 3
    with pytest.raises(openstack.exceptions.ConflictException):
        conn.network.create_security_group_rule(
            security_group_id=sg.id, direction="ingress", ethertype="IPv4", protocol="tcp",
            port_range_min=22, port_range_max=22, remote_ip_prefix="0.0.0.0/0",
        )

    port = conn.network.create_port(
        network_id=net.id, name="sdk-port",
        fixed_ips=[{"subnet_id": subnet.id, "ip_address": "10.10.0.10"}],
        allowed_address_pairs=[{"ip_address": "10.10.0.200"}],
        security_group_ids=[sg.id],
    )
    assert port.fixed_ips == [{"subnet_id": subnet.id, "ip_address": "10.10.0.10"}]
    assert port.mac_address and port.mac_address.count(":") == 5
    assert [p["ip_address"] for p in port.allowed_address_pairs] == ["10.10.0.200"]
    assert port.allowed_address_pairs[0].get("mac_address") == port.mac_address
    assert port.security_group_ids == [sg.id]
    auto = conn.network.create_port(network_id=net.id, name="sdk-port-auto")
    assert len(auto.fixed_ips) == 1 and _in(auto.fixed_ips[0]["ip_address"], "10.10.0.0/24")
    assert auto.fixed_ips[0]["ip_address"] not in ("10.10.0.1", "10.10.0.10")

    fip = conn.network.create_ip(floating_network_id=ext_net.id)
    assert ipaddress.ip_address(fip.floating_ip_address).version == 4 and fip.port_id is None
    assert fip.floating_ip_address != gw_ip["ip_address"]
    fip = conn.network.update_ip(fip, port_id=port.id)
    assert fip.port_id == port.id and fip.fixed_ip_address == "10.10.0.10"
    assert fip.router_id == router.id
    listed = list(conn.network.ips(port_id=port.id))
    assert [f.id for f in listed] == [fip.id]
    fip = conn.network.update_ip(fip, port_id=None)
    assert fip.port_id is None and fip.fixed_ip_address is None

    # Neutron refuses to delete a network that still has ports.
    with pytest.raises(openstack.exceptions.ConflictException):
        conn.network.delete_network(net)

    conn.network.delete_ip(fip)
    conn.network.delete_port(port)
    conn.network.delete_port(auto)
    conn.network.remove_interface_from_router(router, subnet_id=subnet.id)
    with pytest.raises(openstack.exceptions.NotFoundException):
        conn.network.get_port(iface["port_id"])
    conn.network.delete_router(router)
    conn.network.delete_security_group(sg)
    conn.network.delete_subnet(subnet)
    conn.network.delete_network(net)
    assert sim.leftovers(project_id) == {}


def test_network_stack_cli(sim, cli, project_id, ext_net):
    net = cli.json("network", "create", "cli-net")
    assert net["status"] == "ACTIVE" and net["project_id"] == project_id
    subnet = cli.json(
        "subnet", "create", "--network", "cli-net", "--subnet-range", "10.20.0.0/24", "cli-subnet"
    )
    assert subnet["cidr"] == "10.20.0.0/24" and subnet["gateway_ip"] == "10.20.0.1"
    assert subnet["network_id"] == net["id"]

    router = cli.json("router", "create", "cli-router")
    assert router["name"] == "cli-router" and not router["external_gateway_info"]
    cli.ok("router", "set", "--external-gateway", ext_net.name, "cli-router")
    cli.ok("router", "add", "subnet", "cli-router", "cli-subnet")
    shown = cli.json("router", "show", "cli-router")
    gw = shown["external_gateway_info"]
    assert gw["network_id"] == ext_net.id and len(gw["external_fixed_ips"]) == 1
    rports = cli.json("port", "list", "--router", "cli-router")
    fixed = [ip for p in rports for ip in p["Fixed IP Addresses"]]
    assert {"subnet_id": subnet["id"], "ip_address": "10.20.0.1"} in fixed

    sg = cli.json("security", "group", "create", "cli-sg")
    assert sg["name"] == "cli-sg"
    rule = cli.json(
        "security", "group", "rule", "create", "--ingress", "--protocol", "tcp",
        "--dst-port", "6443", "cli-sg",
    )
    assert rule["port_range_min"] == 6443 and rule["port_range_max"] == 6443
    assert rule["protocol"] == "tcp" and rule["remote_ip_prefix"] == "0.0.0.0/0"
    assert rule["security_group_id"] == sg["id"]
    rules = cli.json("security", "group", "rule", "list", "cli-sg")
    assert len(rules) == 3

    port = cli.json(
        "port", "create", "--network", "cli-net",
        "--fixed-ip", "subnet=cli-subnet,ip-address=10.20.0.10",
        "--allowed-address", "ip-address=10.20.0.200",
        "--security-group", "cli-sg", "cli-port",
    )
    assert port["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.20.0.10"}]
    assert [p["ip_address"] for p in port["allowed_address_pairs"]] == ["10.20.0.200"]
    assert port["security_group_ids"] == [sg["id"]]

    fip = cli.json("floating", "ip", "create", "--port", "cli-port", ext_net.name)
    assert fip["port_id"] == port["id"] and fip["fixed_ip_address"] == "10.20.0.10"
    fip_addr = fip["floating_ip_address"]
    cli.ok("floating", "ip", "unset", "--port", fip_addr)
    assert cli.json("floating", "ip", "show", fip_addr)["port_id"] is None
    cli.ok("floating", "ip", "set", "--port", "cli-port", fip_addr)
    shown = cli.json("floating", "ip", "show", fip_addr)
    assert shown["port_id"] == port["id"] and shown["fixed_ip_address"] == "10.20.0.10"
    listed = cli.json("floating", "ip", "list", "--port", "cli-port")
    assert [f["ID"] for f in listed] == [fip["id"]]

    cli.ok("floating", "ip", "delete", fip_addr)
    cli.ok("port", "delete", "cli-port")
    cli.ok("router", "remove", "subnet", "cli-router", "cli-subnet")
    cli.ok("router", "unset", "--external-gateway", "cli-router")
    cli.ok("router", "delete", "cli-router")
    cli.ok("security", "group", "delete", "cli-sg")
    cli.ok("subnet", "delete", "cli-subnet")
    cli.ok("network", "delete", "cli-net")
    assert cli.json("network", "list", "--name", "cli-net") == []
    assert sim.leftovers(project_id) == {}


def test_pagination_sdk(sim, conn, project_id):
    created = {conn.network.create_network(name=f"page-{i}").id for i in range(3)}
    # With a limit the SDK follows Neutron's `networks_links` next link until the end.
    paged = [n.id for n in conn.network.networks(limit=1)]
    assert len(paged) == len(set(paged))
    assert created <= set(paged)
    assert set(paged) == {n.id for n in conn.network.networks()}
    for net_id in created:
        conn.network.delete_network(net_id)
    assert sim.leftovers(project_id) == {}
