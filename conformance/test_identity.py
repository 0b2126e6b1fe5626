"""Keystone: password and application-credential auth, project isolation, bad credentials."""

import keystoneauth1.exceptions
import openstack
import openstack.exceptions
import pytest


@pytest.mark.sim_only  # capo-sim's one-port URL layout; the real services have a port each
def test_password_auth_sdk(sim):
    conn = openstack.connect(cloud="capo-sim")
    token = conn.authorize()
    assert isinstance(token, str) and len(token) > 10
    assert conn.current_project_id
    assert conn.current_user_id
    # The catalog plus version discovery must lead the SDK to every service the provider uses.
    for proxy in (conn.compute, conn.network, conn.load_balancer, conn.image, conn.block_storage):
        assert proxy.get_endpoint().startswith(sim.base_url + "/"), proxy.service_type
    assert conn.block_storage.get_endpoint().rstrip("/").endswith(conn.current_project_id)


def test_application_credential_auth_sdk(sim):
    password = openstack.connect(cloud="capo-sim")
    appcred = openstack.connect(cloud="capo-sim-appcred")
    assert appcred.authorize()
    # The credential is scoped to its project; it must be the password cloud's default project.
    assert appcred.current_project_id == password.current_project_id
    # A scoped call works with it.
    nets = list(appcred.network.networks(is_router_external=True))
    assert len(nets) >= 1


def test_token_issue_cli(cli):
    pw = cli.json("token", "issue")
    ac = cli.json("token", "issue", cloud="capo-sim-appcred")
    other = cli.json("token", "issue", cloud="capo-sim-other")
    for tok in (pw, ac, other):
        assert tok["id"] and tok["project_id"] and tok["expires"]
    assert ac["project_id"] == pw["project_id"]
    assert other["project_id"] != pw["project_id"]


def test_projects_are_isolated(sim, conn):
    other = openstack.connect(cloud="capo-sim-other")
    assert other.current_project_id != conn.current_project_id
    net = conn.network.create_network(name="isolated-net")
    assert net.project_id == conn.current_project_id
    assert net.id in {n.id for n in conn.network.networks(name="isolated-net")}
    assert net.id not in {n.id for n in other.network.networks()}
    with pytest.raises(openstack.exceptions.NotFoundException):
        other.network.get_network(net.id)
    # The state dump used by every "nothing left behind" check does see the network, only in its
    # owner's project.
    assert net.id in sim.ids(conn.current_project_id)
    assert net.id not in sim.ids(other.current_project_id)
    conn.network.delete_network(net)
    assert sim.leftovers(conn.current_project_id) == {}


def _wrong_password_connection(sim):
    """A connection with the `capo-sim` cloud's settings but a wrong password."""
    auth = dict(sim.clouds["capo-sim"]["auth"])
    auth["password"] = "definitely-not-the-password"
    region = sim.clouds["capo-sim"].get("region_name")
    return openstack.connect(auth=auth, auth_type="password", region_name=region)


def test_wrong_password_sdk(sim):
    conn = _wrong_password_connection(sim)
    with pytest.raises(openstack.exceptions.SDKException) as err:
        conn.authorize()
    assert "401" in str(err.value)
    with pytest.raises(
        (keystoneauth1.exceptions.http.Unauthorized, openstack.exceptions.HttpException)
    ) as err:
        list(conn.network.networks())
    status = getattr(err.value, "http_status", None) or getattr(err.value, "status_code", None)
    assert status == 401


def test_wrong_password_cli(cli):
    res = cli.run("--os-password", "definitely-not-the-password", "token", "issue")
    assert res.returncode != 0
    assert "HTTP 401" in res.stderr
    assert "definitely-not-the-password" not in res.stderr + res.stdout
