"""Wire details the clients depend on, checked through the SDK's own keystoneauth session: version
discovery, microversion negotiation, error body shapes, Glance list shape, 401 without a token."""

import uuid

import pytest
import requests


@pytest.mark.sim_only  # capo-sim's URL layout (`{base}/identity/v3`)
def test_identity_version_documents(sim, conn):
    v3 = conn.session.get(f"{sim.base_url}/identity/v3", authenticated=False).json()
    assert v3["version"]["id"].startswith("v3")
    assert v3["version"]["status"] in ("stable", "CURRENT")
    hrefs = [link["href"] for link in v3["version"]["links"] if link["rel"] == "self"]
    assert hrefs and hrefs[0].rstrip("/") == f"{sim.base_url}/identity/v3"
    root = conn.session.get(
        f"{sim.base_url}/identity", authenticated=False, raise_exc=False
    )
    assert root.status_code in (200, 300)
    values = root.json()["versions"]
    values = values["values"] if isinstance(values, dict) else values
    assert any(v["id"].startswith("v3") for v in values)


def test_compute_microversions(conn):
    data = conn.compute.get_endpoint_data()
    assert data.min_microversion == (2, 1)
    assert data.max_microversion >= (2, 96)
    resp = conn.compute.get("/servers", microversion="2.96")
    assert resp.headers["OpenStack-API-Version"] == "compute 2.96"
    assert resp.json() == {"servers": []}
    too_high = conn.compute.get("/servers", microversion="2.999", raise_exc=False)
    assert too_high.status_code == 406


def test_block_storage_endpoint_and_microversions(conn):
    data = conn.block_storage.get_endpoint_data()
    assert data.max_microversion >= (3, 0)
    assert data.url.rstrip("/").endswith(f"/v3/{conn.current_project_id}")
    resp = conn.block_storage.get("/volumes/detail", microversion="3.0")
    assert resp.json()["volumes"] == []


def test_network_and_load_balancer_endpoints(conn):
    assert conn.network.get_endpoint().rstrip("/").endswith("/v2.0")
    # Octavia serves its API under both /v2 and /v2.0; python-octaviaclient always uses /v2.0.
    assert conn.load_balancer.get_endpoint().rstrip("/").endswith(("/v2", "/v2.0"))
    assert conn.image.get_endpoint().rstrip("/").endswith("/v2")


def test_not_found_bodies(conn):
    missing = str(uuid.uuid4())
    nova = conn.compute.get(f"/servers/{missing}", raise_exc=False)
    assert nova.status_code == 404 and nova.json()["itemNotFound"]["code"] == 404
    neutron = conn.network.get(f"/networks/{missing}", raise_exc=False)
    assert neutron.status_code == 404
    assert neutron.json()["NeutronError"]["type"] == "NetworkNotFound"
    octavia = conn.load_balancer.get(f"/lbaas/loadbalancers/{missing}", raise_exc=False)
    assert octavia.status_code == 404
    assert octavia.json()["faultcode"] == "Client" and missing in octavia.json()["faultstring"]
    cinder = conn.block_storage.get(f"/volumes/{missing}", raise_exc=False)
    assert cinder.status_code == 404 and cinder.json()["itemNotFound"]["code"] == 404
    glance = conn.image.get(f"/images/{missing}", raise_exc=False)
    assert glance.status_code == 404


def test_glance_list_shape(conn, image):
    body = conn.image.get(f"/images?name={image.name}").json()
    assert [i["id"] for i in body["images"]] == [image.id]
    assert body["first"].startswith("/v2/images")
    assert body["schema"] == "/v2/schemas/images"
    assert "next" not in body
    one = body["images"][0]
    assert one["self"] == f"/v2/images/{image.id}" and one["status"] == "active"
    # Pagination as the SDK follows it: `limit` then the relative `next` link.
    everything = {i.id for i in conn.image.images()}
    paged = {i.id for i in conn.image.images(limit=1)}
    assert paged == everything and len(everything) >= 2


def test_keypair_list_is_nested(conn):
    conn.compute.create_keypair(name="nested")
    body = conn.compute.get("/os-keypairs").json()
    assert [k["keypair"]["name"] for k in body["keypairs"]] == ["nested"]


@pytest.mark.parametrize("proxy,path", [
    ("compute", "/servers"), ("network", "/networks"), ("load_balancer", "/lbaas/loadbalancers"),
    ("image", "/images"), ("block_storage", "/volumes"),
])
def test_no_token_is_401(conn, proxy, path):
    url = getattr(conn, proxy).get_endpoint().rstrip("/") + path
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, headers={"X-Auth-Token": "bogus"}, timeout=10).status_code == 401
