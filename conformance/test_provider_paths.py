"""Calls the Cluster API provider makes beyond the basic list: boot from volume, server groups with
scheduler hints, config drive and user data, Nova's regex name filter, trunks with subports, and the
409s Neutron answers while a resource is still in use."""

import base64

import openstack.exceptions
import pytest

from simctl import WAIT_SECONDS, poll


@pytest.fixture
def lan(conn):
    """A tenant network with one subnet and a port for each of two servers."""
    net = conn.network.create_network(name="pp-net")
    subnet = conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.90.0.0/24",
                                        name="pp-subnet")
    return net, subnet


def _cleanup_lan(conn, net, subnet):
    for port in conn.network.ports(network_id=net.id):
        conn.network.delete_port(port)
    conn.network.delete_subnet(subnet)
    conn.network.delete_network(net)


def test_boot_from_volume_sdk(sim, conn, project_id, image, flavor, lan):
    net, subnet = lan
    server = conn.compute.create_server(
        name="bfv", flavor_id=flavor.id, networks=[{"uuid": net.id}],
        block_device_mapping=[{
            "boot_index": 0, "uuid": image.id, "source_type": "image",
            "destination_type": "volume", "volume_size": 2, "delete_on_termination": True,
        }],
    )
    server = conn.compute.wait_for_server(server, wait=WAIT_SECONDS)
    assert not server.image or not server.image.id
    attached = server.attached_volumes
    assert len(attached) == 1
    volume = conn.block_storage.get_volume(attached[0]["id"])
    assert volume.status == "in-use" and volume.size == 2 and volume.is_bootable
    assert [a["server_id"] for a in volume.attachments] == [server.id]
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=WAIT_SECONDS)
    # delete_on_termination: the root volume goes with the server.
    poll(lambda: [v.id for v in conn.block_storage.volumes()], lambda v: v == [],
         "root volume deleted with its server")
    _cleanup_lan(conn, net, subnet)
    assert sim.leftovers(project_id) == {}


def test_boot_from_volume_cli(sim, cli, conn, project_id, image, flavor, lan):
    net, subnet = lan
    server = cli.json("server", "create", "--image", image.name, "--boot-from-volume", "1",
                      "--flavor", flavor.name, "--network", net.id, "--wait", "cli-bfv")
    assert server["status"] == "ACTIVE"
    vols = cli.json("volume", "list")
    assert len(vols) == 1 and vols[0]["Status"] == "in-use" and vols[0]["Size"] == 1
    cli.ok("server", "delete", "--wait", "cli-bfv")
    # The CLI asks for delete_on_termination=false by default, so the volume stays, detached.
    vol = poll(lambda: cli.json("volume", "show", vols[0]["ID"]),
               lambda v: v["status"] == "available", "root volume detached")
    assert vol["attachments"] == []
    cli.ok("volume", "delete", vols[0]["ID"])
    poll(lambda: cli.json("volume", "list"), lambda v: v == [], "volume gone")
    _cleanup_lan(conn, net, subnet)
    assert sim.leftovers(project_id) == {}


def test_server_group_hint_and_config_drive_sdk(sim, conn, project_id, image, flavor, lan):
    net, subnet = lan
    group = conn.compute.create_server_group(name="pp-group", policy="soft-anti-affinity")
    assert group.policy == "soft-anti-affinity" and group.member_ids == []
    user_data = base64.b64encode(b"#cloud-config\n{}\n").decode()
    servers = [
        conn.compute.create_server(
            name=f"pp-{i}", image_id=image.id, flavor_id=flavor.id,
            networks=[{"uuid": net.id}], scheduler_hints={"group": group.id},
            config_drive=True, user_data=user_data,
        )
        for i in range(2)
    ]
    servers = [conn.compute.wait_for_server(s, wait=WAIT_SECONDS) for s in servers]
    assert all(s.has_config_drive in (True, "True") for s in servers)
    # Nova's name filter is a regular expression.
    assert sorted(s.name for s in conn.compute.servers(name="^pp-")) == ["pp-0", "pp-1"]
    assert [s.name for s in conn.compute.servers(name="pp-1$")] == ["pp-1"]
    assert sorted(conn.compute.get_server_group(group.id).member_ids) == sorted(
        s.id for s in servers
    )
    for server in servers:
        conn.compute.delete_server(server)
        conn.compute.wait_for_delete(server, wait=WAIT_SECONDS)
    assert conn.compute.get_server_group(group.id).member_ids == []
    conn.compute.delete_server_group(group)
    _cleanup_lan(conn, net, subnet)
    assert sim.leftovers(project_id) == {}


def test_server_group_hint_cli(sim, cli, conn, project_id, image, flavor, lan):
    net, subnet = lan
    group = cli.json("server", "group", "create", "--policy", "soft-anti-affinity", "cli-group")
    assert group["policy"] == "soft-anti-affinity"
    server = cli.json("server", "create", "--image", image.name, "--flavor", flavor.name,
                      "--network", net.id, "--hint", f"group={group['id']}",
                      "--config-drive", "True", "--wait", "cli-grouped")
    assert server["status"] == "ACTIVE" and server["config_drive"] == "True"
    shown = cli.json("server", "group", "show", "cli-group")
    assert shown["members"] == [server["id"]]
    cli.ok("server", "delete", "--wait", "cli-grouped")
    cli.ok("server", "group", "delete", "cli-group")
    assert cli.json("server", "group", "list") == []
    _cleanup_lan(conn, net, subnet)
    assert sim.leftovers(project_id) == {}


def test_trunk_sdk_and_cli(sim, conn, cli, project_id, lan):
    net, subnet = lan
    parent = conn.network.create_port(network_id=net.id, name="pp-parent")
    child = conn.network.create_port(network_id=net.id, name="pp-child")
    trunk = conn.network.create_trunk(
        name="pp-trunk", port_id=parent.id,
        sub_ports=[{"port_id": child.id, "segmentation_type": "vlan", "segmentation_id": 100}],
    )
    assert trunk.port_id == parent.id
    assert [(s["port_id"], s["segmentation_id"]) for s in trunk.sub_ports] == [(child.id, 100)]
    shown = cli.json("network", "trunk", "show", "pp-trunk")
    assert shown["port_id"] == parent.id and shown["sub_ports"][0]["port_id"] == child.id

    cli_child = cli.json("port", "create", "--network", net.id, "pp-child2")
    cli.ok("network", "subport", "list", "--trunk", "pp-trunk")
    cli.ok("network", "trunk", "set", "--subport",
           f"port={cli_child['id']},segmentation-type=vlan,segmentation-id=200", "pp-trunk")
    subports = cli.json("network", "subport", "list", "--trunk", "pp-trunk")
    assert sorted(s["Segmentation ID"] for s in subports) == [100, 200]
    cli.ok("network", "trunk", "delete", "pp-trunk")
    assert list(conn.network.trunks()) == []
    _cleanup_lan(conn, net, subnet)
    assert sim.leftovers(project_id) == {}


def test_in_use_conflicts_sdk(sim, conn, project_id, lan):
    net, subnet = lan
    sg = conn.network.create_security_group(name="pp-sg")
    port = conn.network.create_port(network_id=net.id, security_group_ids=[sg.id])
    with pytest.raises(openstack.exceptions.ConflictException):
        conn.network.delete_security_group(sg)
    with pytest.raises(openstack.exceptions.ConflictException):
        conn.network.delete_subnet(subnet)
    conn.network.delete_port(port)
    conn.network.delete_security_group(sg)
    _cleanup_lan(conn, net, subnet)
    assert sim.leftovers(project_id) == {}


def test_interfaces_and_floating_ip_cli(sim, cli, project_id, image, flavor, ext_net):
    cli.ok("network", "create", "if-net")
    cli.ok("subnet", "create", "--network", "if-net", "--subnet-range", "10.95.0.0/24", "if-subnet")
    cli.ok("router", "create", "if-router")
    cli.ok("router", "set", "--external-gateway", ext_net.name, "if-router")
    cli.ok("router", "add", "subnet", "if-router", "if-subnet")
    server = cli.json("server", "create", "--image", image.name, "--flavor", flavor.name,
                      "--network", "if-net", "--wait", "if-server")
    [first_ip] = server["addresses"]["if-net"]
    extra = cli.json("port", "create", "--network", "if-net",
                     "--fixed-ip", "subnet=if-subnet,ip-address=10.95.0.50", "if-extra")
    # os-interface attach/detach of a pre-created port.
    cli.ok("server", "add", "port", "if-server", "if-extra")
    addrs = cli.json("server", "show", "if-server")["addresses"]["if-net"]
    assert sorted(addrs) == sorted([first_ip, "10.95.0.50"])
    assert cli.json("port", "show", "if-extra")["device_id"] == server["id"]
    cli.ok("server", "remove", "port", "if-server", "if-extra")
    assert cli.json("server", "show", "if-server")["addresses"]["if-net"] == [first_ip]
    assert cli.json("port", "show", "if-extra")["device_id"] == ""
    # Floating IP through the server commands (Neutron association of the server's port).
    fip = cli.json("floating", "ip", "create", ext_net.name)["floating_ip_address"]
    cli.ok("server", "add", "floating", "ip", "if-server", fip)
    assert sorted(cli.json("server", "show", "if-server")["addresses"]["if-net"]) == sorted(
        [first_ip, fip]
    )
    assert cli.json("floating", "ip", "show", fip)["fixed_ip_address"] == first_ip
    cli.ok("server", "remove", "floating", "ip", "if-server", fip)
    assert cli.json("floating", "ip", "show", fip)["port_id"] is None

    cli.ok("floating", "ip", "delete", fip)
    cli.ok("server", "delete", "--wait", "if-server")
    cli.ok("port", "delete", "if-extra")
    cli.ok("router", "remove", "subnet", "if-router", "if-subnet")
    cli.ok("router", "delete", "if-router")
    cli.ok("subnet", "delete", "if-subnet")
    cli.ok("network", "delete", "if-net")
    assert sim.leftovers(project_id) == {}
