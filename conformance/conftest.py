"""Fixtures: one capo-sim process per session, a clean world per test, SDK connections and the CLI.

CAPO_CONFORMANCE_CLOUD=real runs the same tests against the real OpenStack services of
hack/openstack-env.sh instead (differential fidelity): the `sim` fixture is then a
simctl.RealCloud, tests marked `sim_only` are skipped, and each test's resources are deleted
after it instead of resetting the simulator before it.
"""

import os

import openstack
import pytest

from simctl import Cli, RealCloud, Sim, find_or_build_sim, real_clouds_yaml

CLOUD = os.environ.get("CAPO_CONFORMANCE_CLOUD", "sim")
if CLOUD not in ("sim", "real"):
    raise pytest.UsageError(f"CAPO_CONFORMANCE_CLOUD must be sim or real, not {CLOUD!r}")
REAL = CLOUD == "real"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "sim_only: needs capo-sim itself (its control API or its URL layout); "
        "skipped with CAPO_CONFORMANCE_CLOUD=real",
    )


def pytest_collection_modifyitems(config, items):
    if not REAL:
        return
    skip = pytest.mark.skip(reason="sim_only: needs capo-sim (CAPO_CONFORMANCE_CLOUD=real)")
    for item in items:
        if "sim_only" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    return f"conformance cloud: {CLOUD}"


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    """The running simulator (or, with CAPO_CONFORMANCE_CLOUD=real, the real services);
    OS_CLIENT_CONFIG_FILE points at the clouds.yaml with the `capo-sim*` clouds."""
    if REAL:
        instance = RealCloud(real_clouds_yaml(), tmp_path_factory.mktemp("capo-real"))
        instance.reset()
    else:
        instance = Sim(find_or_build_sim(), tmp_path_factory.mktemp("capo-sim"))
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
    """Every test starts from the seed (real services: every test's resources are deleted after it)."""
    if REAL:
        yield
        sim.reset()
        return
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
