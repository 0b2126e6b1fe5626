"""Tag filters (Neutron standard-attr tags, Nova server tags), Glance images by name, and the error
shapes the clients turn into NotFound."""

import uuid

import openstack
import openstack.exceptions
import pytest

from simctl import WAIT_SECONDS


@pytest.fixture
def tagged_networks(conn):
    """Three networks tagged {a,b}, {a}, {c}."""
    nets = {}
    for name, tags in (("tag-ab", ["a", "b"]), ("tag-a", ["a"]), ("tag-c", ["c"])):
        net = conn.network.create_network(name=name)
        conn.network.set_tags(net, tags)
        nets[name] = net.id
    return nets


def test_tag_filters_sdk(sim, conn, project_id, tagged_networks):
    def names(**query):
        return sorted(n.name for n in conn.network.networks(**query) if n.name.startswith("tag-"))

    assert sorted(conn.network.get_network(tagged_networks["tag-ab"]).tags) == ["a", "b"]
    assert names(tags="a,b") == ["tag-ab"]
    assert names(tags="a") == ["tag-a", "tag-ab"]
    assert names(any_tags="b,c") == ["tag-ab", "tag-c"]
    assert names(not_tags="a") == ["tag-c"]
    assert names(not_any_tags="b,c") == ["tag-a"]
    for net_id in tagged_networks.values():
        conn.network.delete_network(net_id)
    assert sim.leftovers(project_id) == {}


def test_tag_filters_cli(sim, cli, project_id):
    cli.ok("network", "create", "--tag", "x", "--tag", "y", "cli-tag-xy")
    cli.ok("network", "create", "--tag", "x", "cli-tag-x")
    cli.ok("network", "create", "--tag", "z", "cli-tag-z")
    assert sorted(cli.json("network", "show", "cli-tag-xy")["tags"]) == ["x", "y"]

    def names(*flags):
        return sorted(n["Name"] for n in cli.json("network", "list", *flags)
                      if n["Name"].startswith("cli-tag-"))

    assert names("--tags", "x,y") == ["cli-tag-xy"]
    assert names("--tags", "x") == ["cli-tag-x", "cli-tag-xy"]
    assert names("--any-tags", "y,z") == ["cli-tag-xy", "cli-tag-z"]
    assert names("--not-tags", "x") == ["cli-tag-z"]
    for name in ("cli-tag-xy", "cli-tag-x", "cli-tag-z"):
        cli.ok("network", "delete", name)
    assert sim.leftovers(project_id) == {}


def test_server_tag_filters_sdk(sim, conn, project_id, image, flavor):
    net = conn.network.create_network(name="stag-net")
    subnet = conn.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.80.0.0/24")
    servers = []
    for name, tags in (("stag-ab", ["a", "b"]), ("stag-c", ["c"])):
        servers.append(conn.compute.create_server(
            name=name, image_id=image.id, flavor_id=flavor.id,
            networks=[{"uuid": net.id}], tags=tags,
        ))
    for server in servers:
        conn.compute.wait_for_server(server, wait=WAIT_SECONDS)
    assert sorted(s.name for s in conn.compute.servers(tags="a")) == ["stag-ab"]
    assert sorted(s.name for s in conn.compute.servers(any_tags="b,c")) == ["stag-ab", "stag-c"]
    assert sorted(s.name for s in conn.compute.servers(not_tags="a")) == ["stag-c"]
    for server in servers:
        conn.compute.delete_server(server)
        conn.compute.wait_for_delete(server, wait=WAIT_SECONDS)
    # Ports Nova created for `networks: [{uuid}]` are deleted with their servers.
    assert list(conn.network.ports(network_id=net.id)) == []
    conn.network.delete_subnet(subnet)
    conn.network.delete_network(net)
    assert sim.leftovers(project_id) == {}


def test_images_by_name_sdk(conn, image):
    found = conn.image.find_image(image.name)
    assert found is not None and found.id == image.id
    listed = list(conn.image.images(name=image.name))
    assert [i.id for i in listed] == [image.id]
    assert list(conn.image.images(name="no-such-image")) == []
    got = conn.image.get_image(image.id)
    assert got.name == image.name and got.status == "active"
    assert conn.image.find_image("no-such-image") is None


def test_images_by_name_cli(cli, image):
    listed = cli.json("image", "list", "--name", image.name)
    assert [(i["ID"], i["Name"], i["Status"]) for i in listed] == [(image.id, image.name, "active")]
    shown = cli.json("image", "show", image.name)
    assert shown["id"] == image.id and shown["status"] == "active"
    assert cli.json("image", "list", "--name", "no-such-image") == []


def test_unknown_ids_sdk(conn):
    missing = str(uuid.uuid4())
    calls = [
        conn.network.get_network, conn.network.get_port, conn.network.get_router,
        conn.compute.get_server, conn.block_storage.get_volume, conn.image.get_image,
        conn.load_balancer.get_load_balancer,
    ]
    for call in calls:
        with pytest.raises(openstack.exceptions.NotFoundException) as err:
            call(missing)
        assert err.value.status_code == 404, call.__name__


@pytest.mark.parametrize("resource", [
    ["server"], ["network"], ["port"], ["volume"], ["image"], ["loadbalancer"],
])
def test_unknown_ids_cli(cli, resource):
    missing = str(uuid.uuid4())
    res = cli.run(*resource, "show", missing)
    assert res.returncode == 1
    assert missing in res.stderr or "not found" in res.stderr.lower()
    assert "Traceback" not in res.stderr


def test_image_tags_and_properties(sim, conn, cli, project_id):
    # raw: Glance 33 checks uploaded data against disk_format, and empty data is not qcow2 (415).
    created = cli.json("image", "create", "--disk-format", "raw", "--container-format", "bare",
                       "--private", "--tag", "capo", "--property", "os_distro=capo-linux",
                       "own-image")
    # With stdin not a terminal the CLI uploads stdin (empty here) as the image data, so the image
    # goes active with size 0, as it would on Glance.
    assert created["status"] == "active" and created["size"] == 0
    assert created["visibility"] == "private"
    assert created["tags"] == ["capo"]
    # The same with qcow2: the upload is refused (415) and the CLI deletes the image again.
    res = cli.run("image", "create", "--disk-format", "qcow2", "--container-format", "bare",
                  "--private", "own-qcow2")
    assert res.returncode != 0
    assert "415" in res.stderr or "Unsupported Media Type" in res.stderr, res.stderr
    assert conn.image.find_image("own-qcow2") is None
    # Glance's `tag` filter, as the provider's image lookup uses it.
    assert [i.id for i in conn.image.images(tag="capo")] == [created["id"]]
    assert [i.id for i in conn.image.images(tag="no-such-tag")] == []
    own = conn.image.find_image("own-image")
    assert own.os_distro == "capo-linux" and own.owner == project_id
    # Images of other projects stay invisible unless public.
    other = openstack.connect(cloud="capo-sim-other")
    assert other.image.find_image("own-image") is None
    cli.ok("image", "delete", "own-image")
    assert conn.image.find_image("own-image") is None
    assert sim.leftovers(project_id) == {}
