"""Fixtures: one capo-sim process per session, a clean world per test, SDK connections and the CLI."""

import os

import openstack
import pytest

from simctl import Cli, Sim, find_or_build_sim


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    """The running simulator; OS_CLIENT_CONFIG_FILE points at the clouds.yaml it wrote."""
    binary = find_or_build_sim()
    instance = Sim(binary, tmp_path_factory.mktemp("capo-sim"))
    old = os.environ.get("OS_CLIENT_CONFIG_FILE")
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(instance.clouds_yaml)
    try:
        yield instance
    finally:
        instance.stop()
        if old is None:
            os.environ.pop("OS_CLIENT_CONFIG_FILE", None)
        else:
            os.environ["OS_CLIENT_CONFIG_FILE"] = old


@pytest.fixture(autouse=True)
def clean_world(sim):
    """Every test starts from the seed."""
    sim.reset()
    yield


@pytest.fixture
def conn(sim):
    """An SDK connection with password auth to the default project."""
    c = openstack.connect(cloud="capo-sim")
    yield c
    c.close()


@pytest.fixture
def cli(sim):
    """The official CLI bound to the `capo-sim` cloud."""
    return Cli(sim.clouds_yaml)


@pytest.fixture
def project_id(conn):
    """Id of the default project (from the token)."""
    pid = conn.current_project_id
    assert pid, "token carries no project id"
    return pid


@pytest.fixture
def ext_net(conn):
    """The seeded external network (router:external)."""
    nets = list(conn.network.networks(is_router_external=True))
    assert nets, "the seed has no external network"
    return nets[0]


@pytest.fixture
def image(conn):
    """A seeded active image."""
    images = [i for i in conn.image.images() if i.status == "active"]
    assert images, "the seed has no active image"
    return images[0]


@pytest.fixture
def flavor(conn):
    """The smallest seeded flavor."""
    flavors = sorted(conn.compute.flavors(), key=lambda f: (f.ram, f.vcpus, f.name))
    assert flavors, "the seed has no flavor"
    return flavors[0]
