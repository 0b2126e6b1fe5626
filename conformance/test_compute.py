"""Nova and Cinder: keypairs, servers from image+flavor on a pre-created port waited to ACTIVE,
volumes created and attached, availability zones — with the SDK and the CLI, then everything deleted."""

import openstack.exceptions
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from simctl import WAIT_SECONDS, poll


def _public_key() -> str:
    key = ed25519.Ed25519PrivateKey.generate()
    return key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode()


def _net_with_port(conn, name: str, cidr: str, ip: str):
    net = conn.network.create_network(name=f"{name}-net")
    subnet = conn.network.create_subnet(network_id=net.id, ip_version=4, cidr=cidr)
    port = conn.network.create_port(
        network_id=net.id, name=f"{name}-port",
        fixed_ips=[{"subnet_id": subnet.id, "ip_address": ip}],
    )
    return net, subnet, port


def test_keypairs_sdk(sim, conn, project_id):
    generated = conn.compute.create_keypair(name="sdk-generated")
    assert generated.private_key and "PRIVATE KEY" in generated.private_key
    assert generated.public_key and generated.fingerprint
    pub = _public_key()
    imported = conn.compute.create_keypair(name="sdk-imported", public_key=pub)
    assert imported.public_key == pub and not imported.private_key
    assert imported.type == "ssh"
    names = sorted(k.name for k in conn.compute.keypairs())
    assert names == ["sdk-generated", "sdk-imported"]
    assert conn.compute.get_keypair("sdk-imported").public_key == pub
    conn.compute.delete_keypair("sdk-generated")
    conn.compute.delete_keypair("sdk-imported")
    assert list(conn.compute.keypairs()) == []
    with pytest.raises(openstack.exceptions.NotFoundException):
        conn.compute.get_keypair("sdk-imported")
    assert sim.leftovers(project_id) == {}


def test_keypairs_cli(sim, cli, project_id, tmp_path):
    pub = _public_key()
    path = tmp_path / "id.pub"
    path.write_text(pub + "\n")
    kp = cli.json("keypair", "create", "--public-key", str(path), "cli-key")
    assert kp["name"] == "cli-key" and kp["fingerprint"]
    assert [k["Name"] for k in cli.json("keypair", "list")] == ["cli-key"]
    assert cli.json("keypair", "show", "cli-key")["fingerprint"] == kp["fingerprint"]
    cli.ok("keypair", "delete", "cli-key")
    assert cli.json("keypair", "list") == []
    assert sim.leftovers(project_id) == {}


def test_server_with_volume_sdk(sim, conn, project_id, image, flavor):
    net, subnet, port = _net_with_port(conn, "sdk-srv", "10.30.0.0/24", "10.30.0.10")
    conn.compute.create_keypair(name="sdk-srv-key", public_key=_public_key())
    server = conn.compute.create_server(
        name="sdk-server", image_id=image.id, flavor_id=flavor.id,
        networks=[{"port": port.id}], key_name="sdk-srv-key", metadata={"role": "worker"},
    )
    assert server.id
    server = conn.compute.wait_for_server(server, status="ACTIVE", failures=["ERROR"],
                                          wait=WAIT_SECONDS)
    assert server.status == "ACTIVE"
    assert server.name == "sdk-server" and server.key_name == "sdk-srv-key"
    assert server.metadata == {"role": "worker"}
    assert server.image.id == image.id
    assert server.flavor.name == flavor.name
    addrs = server.addresses["sdk-srv-net"]
    assert [a["addr"] for a in addrs] == ["10.30.0.10"]
    assert addrs[0]["OS-EXT-IPS-MAC:mac_addr"] == port.mac_address
    bound = conn.network.get_port(port.id)
    assert bound.device_id == server.id and bound.device_owner.startswith("compute:")
    assert server.id in {s.id for s in conn.compute.servers(name="sdk-server")}

    # A floating IP needs a router from the port's subnet to the external network, as in Neutron.
    ext = next(conn.network.networks(is_router_external=True))
    fip = conn.network.create_ip(floating_network_id=ext.id)
    with pytest.raises(openstack.exceptions.NotFoundException):
        conn.network.update_ip(fip, port_id=port.id)
    router = conn.network.create_router(name="sdk-srv-router",
                                        external_gateway_info={"network_id": ext.id})
    conn.network.add_interface_to_router(router, subnet_id=subnet.id)
    fip = conn.network.update_ip(fip, port_id=port.id)
    assert fip.fixed_ip_address == "10.30.0.10"
    # Nova learns of the association from Neutron's network-changed event: at once on the sim,
    # ~2 s later on the real services.
    want = sorted([("10.30.0.10", "fixed"), (fip.floating_ip_address, "floating")])
    poll(lambda: sorted((a["addr"], a["OS-EXT-IPS:type"])
                        for a in conn.compute.get_server(server.id).addresses["sdk-srv-net"]),
         lambda got: got == want, "the floating address in the server's addresses")

    volume = conn.block_storage.create_volume(size=1, name="sdk-vol")
    assert volume.size == 1
    volume = conn.block_storage.wait_for_status(volume, "available", failures=["error"],
                                                wait=WAIT_SECONDS)
    assert volume.status == "available" and volume.attachments == []
    att = conn.compute.create_volume_attachment(server, volume_id=volume.id)
    assert att.volume_id == volume.id and att.device
    volume = conn.block_storage.wait_for_status(volume, "in-use", failures=["error"],
                                                wait=WAIT_SECONDS)
    assert [a["server_id"] for a in volume.attachments] == [server.id]
    attached = list(conn.compute.volume_attachments(server))
    assert [a.volume_id for a in attached] == [volume.id]

    conn.compute.delete_volume_attachment(server, volume.id)
    volume = conn.block_storage.wait_for_status(volume, "available", failures=["error"],
                                                wait=WAIT_SECONDS)
    assert volume.attachments == []
    conn.block_storage.delete_volume(volume)
    conn.block_storage.wait_for_delete(volume, wait=WAIT_SECONDS)
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=WAIT_SECONDS)
    # A pre-created port survives its server, unbound.
    assert conn.network.get_port(port.id).device_id == ""
    conn.compute.delete_keypair("sdk-srv-key")
    conn.network.delete_ip(fip)
    conn.network.remove_interface_from_router(router, subnet_id=subnet.id)
    conn.network.delete_router(router)
    conn.network.delete_port(port)
    conn.network.delete_subnet(subnet)
    conn.network.delete_network(net)
    assert sim.leftovers(project_id) == {}


def test_server_with_volume_cli(sim, cli, conn, project_id, image, flavor, tmp_path):
    cli.ok("network", "create", "cli-srv-net")
    cli.ok("subnet", "create", "--network", "cli-srv-net", "--subnet-range", "10.40.0.0/24",
           "cli-srv-subnet")
    port = cli.json("port", "create", "--network", "cli-srv-net",
                    "--fixed-ip", "subnet=cli-srv-subnet,ip-address=10.40.0.10", "cli-srv-port")
    pub = tmp_path / "id.pub"
    pub.write_text(_public_key() + "\n")
    cli.ok("keypair", "create", "--public-key", str(pub), "cli-srv-key")

    server = cli.json(
        "server", "create", "--image", image.name, "--flavor", flavor.name,
        "--nic", f"port-id={port['id']}", "--key-name", "cli-srv-key", "--wait", "cli-server",
    )
    assert server["status"] == "ACTIVE" and server["name"] == "cli-server"
    assert server["key_name"] == "cli-srv-key"
    assert server["addresses"] == {"cli-srv-net": ["10.40.0.10"]}
    listed = cli.json("server", "list", "--name", "cli-server")
    assert [(s["ID"], s["Status"]) for s in listed] == [(server["id"], "ACTIVE")]

    vol_az = cli.json("availability", "zone", "list", "--volume")[0]["Zone Name"]
    vol = cli.json("volume", "create", "--size", "1", "--availability-zone", vol_az, "cli-vol")
    assert vol["size"] == 1 and vol["availability_zone"] == vol_az
    poll(lambda: cli.json("volume", "show", "cli-vol")["status"], lambda s: s == "available",
         "volume available")
    cli.ok("server", "add", "volume", "cli-server", "cli-vol")
    shown = poll(lambda: cli.json("volume", "show", "cli-vol"),
                 lambda v: v["status"] == "in-use", "volume in-use")
    assert [a["server_id"] for a in shown["attachments"]] == [server["id"]]
    vols = cli.json("server", "volume", "list", "cli-server")
    assert [v["Volume ID"] for v in vols] == [vol["id"]]

    cli.ok("server", "remove", "volume", "cli-server", "cli-vol")
    poll(lambda: cli.json("volume", "show", "cli-vol")["status"], lambda s: s == "available",
         "volume available after detach")
    cli.ok("volume", "delete", "cli-vol")
    cli.ok("server", "delete", "--wait", "cli-server")
    assert cli.json("server", "list") == []
    poll(lambda: cli.json("volume", "list"), lambda v: v == [], "volume gone")
    cli.ok("keypair", "delete", "cli-srv-key")
    cli.ok("port", "delete", "cli-srv-port")
    cli.ok("subnet", "delete", "cli-srv-subnet")
    cli.ok("network", "delete", "cli-srv-net")
    assert sim.leftovers(project_id) == {}


def test_availability_zones_sdk(conn):
    compute = {z.name: z for z in conn.compute.availability_zones()}
    assert compute and all(z.state["available"] for z in compute.values())
    volume = {z.name for z in conn.block_storage.availability_zones()}
    assert volume


def test_availability_zones_cli(cli, conn):
    compute = cli.json("availability", "zone", "list", "--compute")
    assert {z["Zone Name"] for z in compute} == {z.name for z in conn.compute.availability_zones()}
    assert all(z["Zone Status"] == "available" for z in compute)
    volume = cli.json("availability", "zone", "list", "--volume")
    assert {z["Zone Name"] for z in volume} == {
        z.name for z in conn.block_storage.availability_zones()
    }


def test_server_in_requested_az(sim, conn, project_id, image, flavor):
    zones = sorted(z.name for z in conn.compute.availability_zones())
    zone = zones[-1]
    net, subnet, port = _net_with_port(conn, "az", "10.50.0.0/24", "10.50.0.10")
    server = conn.compute.create_server(
        name="az-server", image_id=image.id, flavor_id=flavor.id,
        networks=[{"port": port.id}], availability_zone=zone,
    )
    server = conn.compute.wait_for_server(server, wait=WAIT_SECONDS)
    assert server.availability_zone == zone
    conn.compute.delete_server(server)
    conn.compute.wait_for_delete(server, wait=WAIT_SECONDS)
    conn.network.delete_port(port)
    conn.network.delete_subnet(subnet)
    conn.network.delete_network(net)
    assert sim.leftovers(project_id) == {}
