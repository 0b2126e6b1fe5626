"""Records how the real services answer requests where capo-sim's behaviour needs a reference.

    OS_CLIENT_CONFIG_FILE=<clouds.yaml> <venv>/bin/python hack/openstack-env/probes/wire_probes.py [OUT.json]

Uses the clouds `capo-real-admin` and `capo-real` of hack/openstack-env.sh. Prints one block per
request: method, path, status and the JSON body with ids replaced by <id>; writes all of them to
OUT.json (default probes.json). Creates its own resources (names start with `probe-`) and deletes
them at the end. Findings are summarised in conformance/NOTES.md.
"""

import json
import os
import re
import sys
import time
import uuid

import openstack

ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b")
RESULTS = []


def trim(v):
    if isinstance(v, dict):
        return {k: trim(x) for k, x in v.items()}
    if isinstance(v, list):
        return [trim(x) for x in v]
    if isinstance(v, str):
        return ID.sub("<id>", v)
    return v


def call(label, conn, service, method, path, body=None, headers=None, show=True, **kw):
    proxy = getattr(conn, service)
    resp = proxy.request(path, method, json=body, headers=headers or {}, raise_exc=False, **kw)
    try:
        data = resp.json()
    except ValueError:
        data = resp.text[:500]
    rec = {"label": label, "request": f"{method} {ID.sub('<id>', path)}",
           "body": trim(body), "status": resp.status_code, "response": trim(data)}
    RESULTS.append(rec)
    if show:
        print(f"\n## {label}\n{rec['request']} {json.dumps(rec['body']) if body is not None else ''}\n"
              f"-> {resp.status_code} {json.dumps(rec['response'])[:1500]}", flush=True)
    return resp.status_code, data


def note(label, text):
    RESULTS.append({"label": label, "note": text})
    print(f"\n## {label}\n{text}", flush=True)


def create_tagged(label, conn, service, path, body):
    """POST with `tags` in the body; when refused, record that and create without them."""
    st, data = call(label, conn, service, "POST", path, body)
    if st >= 400:
        plain = {k: ({kk: vv for kk, vv in v.items() if kk != "tags"} if isinstance(v, dict)
                     else [{kk: vv for kk, vv in i.items() if kk != "tags"} for i in v])
                 for k, v in body.items()}
        st, data = call(label + " (retried without tags)", conn, service, "POST", path, plain, show=False)
    return st, data


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "probes.json"
    # PROBE_ADMIN_CLOUD / PROBE_MEMBER_CLOUD select other clouds, e.g. both `capo-sim` to ask
    # capo-sim the same questions (admin-only steps then fail or are skipped).
    admin = openstack.connect(cloud=os.environ.get("PROBE_ADMIN_CLOUD", "capo-real-admin"))
    member = openstack.connect(cloud=os.environ.get("PROBE_MEMBER_CLOUD", "capo-real"))
    undo = []
    try:
        neutron(admin, undo)
        octavia(member, undo)
        nova(admin, member, undo)
        keystone(member)
    finally:
        for fn in reversed(undo):
            try:
                fn()
            except Exception as e:  # noqa: BLE001
                print("cleanup:", type(e).__name__, e, file=sys.stderr)
        with open(out, "w") as f:
            json.dump(RESULTS, f, indent=1)
        print(f"\nwritten {out}", file=sys.stderr)


def neutron(c, undo):
    n = "network"
    st, net = create_tagged("1 network create with tags", c, n, "/networks",
                   {"network": {"name": "probe-net", "tags": ["a", "b"]}})
    net_id = net["network"]["id"]
    undo.append(lambda: c.network.delete_network(net_id))
    st, sub = create_tagged("1 subnet create with tags", c, n, "/subnets",
                   {"subnet": {"network_id": net_id, "ip_version": 4, "cidr": "10.77.0.0/24",
                               "name": "probe-subnet", "tags": ["a"]}})
    sub_id = sub["subnet"]["id"]
    undo.append(lambda: c.network.delete_subnet(sub_id))
    pub = c.network.find_network("public")
    st, rtr = create_tagged("1 router create with tags", c, n, "/routers",
                   {"router": {"name": "probe-router", "tags": ["a"],
                               "external_gateway_info": {"network_id": pub.id}}})
    rtr_id = rtr["router"]["id"]
    undo.append(lambda: c.network.delete_router(rtr_id))
    c.network.add_interface_to_router(rtr_id, subnet_id=sub_id)
    undo.append(lambda: c.network.remove_interface_from_router(rtr_id, subnet_id=sub_id))
    st, sg = create_tagged("1 security-group create with tags", c, n, "/security-groups",
                  {"security_group": {"name": "probe-sg", "tags": ["a"]}})
    sg_id = sg["security_group"]["id"]
    undo.append(lambda: c.network.delete_security_group(sg_id))
    st, sg2 = call("setup second security group", c, n, "POST", "/security-groups",
                   {"security_group": {"name": "probe-sg2"}}, show=False)
    sg2_id = sg2["security_group"]["id"]
    undo.append(lambda: c.network.delete_security_group(sg2_id))
    st, port = create_tagged("1 port create (single) with tags", c, n, "/ports",
                    {"port": {"network_id": net_id, "name": "probe-port", "tags": ["a"]}})
    port_id = port["port"]["id"]
    undo.append(lambda: c.network.delete_port(port_id))
    call("1 GET port created with tags (were they applied?)", c, n, "GET", f"/ports/{port_id}?fields=tags")
    st, bulk = create_tagged("1 ports bulk create with tags", c, n, "/ports",
                    {"ports": [{"network_id": net_id, "name": "probe-bulk1", "tags": ["x"]},
                               {"network_id": net_id, "name": "probe-bulk2", "tags": ["y", "z"]}]})
    for p in bulk.get("ports", []):
        undo.append(lambda pid=p["id"]: c.network.delete_port(pid))
        call("1 GET bulk port (tags applied?)", c, n, "GET", f"/ports/{p['id']}?fields=name&fields=tags")
    st, sub_port = call("setup subport", c, n, "POST", "/ports",
                        {"port": {"network_id": net_id, "name": "probe-subport"}}, show=False)
    sub_port_id = sub_port["port"]["id"]
    undo.append(lambda: c.network.delete_port(sub_port_id))
    st, trunk = create_tagged("1 trunk create with tags", c, n, "/trunks",
                     {"trunk": {"name": "probe-trunk", "port_id": port_id, "tags": ["a"],
                                "sub_ports": [{"port_id": sub_port_id, "segmentation_type": "vlan",
                                               "segmentation_id": 101}]}})
    if st == 201:
        undo.append(lambda: c.network.delete_trunk(trunk["trunk"]["id"]))
    st, fip = create_tagged("1 floatingip create with tags", c, n, "/floatingips",
                   {"floatingip": {"floating_network_id": pub.id, "tags": ["a"]}})
    fip_id = fip["floatingip"]["id"]
    undo.append(lambda: c.network.delete_ip(fip_id))

    # 2. security group rules in bulk
    rule = lambda sgid, port: {"security_group_id": sgid, "direction": "ingress", "protocol": "tcp",  # noqa: E731
                               "port_range_min": port, "port_range_max": port, "ethertype": "IPv4"}
    call("2 security-group-rules bulk, two groups", c, n, "POST", "/security-group-rules",
         {"security_group_rules": [rule(sg_id, 22), rule(sg2_id, 22)]})
    call("2 security-group-rules bulk, one group", c, n, "POST", "/security-group-rules",
         {"security_group_rules": [rule(sg_id, 80), rule(sg_id, 443)]})
    call("2 security-group-rules bulk, one group, duplicate of an existing rule", c, n, "POST",
         "/security-group-rules", {"security_group_rules": [rule(sg_id, 8080), rule(sg_id, 80)]})
    call("2 security-group-rules bulk, duplicate inside the request", c, n, "POST",
         "/security-group-rules", {"security_group_rules": [rule(sg_id, 9090), rule(sg_id, 9090)]})
    call("2 rules of sg after the failed bulks (is 8080/9090 there?)", c, n, "GET",
         f"/security-group-rules?security_group_id={sg_id}&fields=port_range_min")

    # 3. PUT floatingip {} on an associated FIP
    call("3 associate fip", c, n, "PUT", f"/floatingips/{fip_id}", {"floatingip": {"port_id": port_id}})
    time.sleep(1)
    call("3 PUT floatingip with empty object on associated fip", c, n, "PUT", f"/floatingips/{fip_id}",
         {"floatingip": {}})
    time.sleep(1)
    call("3 GET after empty PUT", c, n, "GET", f"/floatingips/{fip_id}?fields=port_id&fields=status")
    call("3 PUT floatingip port_id null", c, n, "PUT", f"/floatingips/{fip_id}", {"floatingip": {"port_id": None}})

    # 4. filters
    call("4 unknown filter", c, n, "GET", "/ports?no_such_attribute=x")
    call("4 unknown filter on networks", c, n, "GET", "/networks?no_such_attribute=x")
    ip = port["port"]["fixed_ips"][0]["ip_address"]
    for q in ("fields=id", "fields=id&fields=name", "limit=1", f"marker={port_id}", "sort_key=name&sort_dir=asc",
              "sort_key=name&sort_dir=desc&limit=1&page_reverse=true", "sort_key=nonexistent",
              "sort_dir=sideways&sort_key=name", "tags=a", "tags=a,b", "tags-any=a,x", "not-tags=a",
              "not-tags-any=x", "description=", "device_owner=", "device_owner=compute:nova",
              f"fixed_ips=ip_address={ip}", f"fixed_ips=subnet_id={sub_id}", "fixed_ips=bogus",
              f"fixed_ips=ip_address_substr={ip.rsplit('.', 1)[0]}", "name=probe-port",
              "name=probe-port&name=probe-bulk1", "status=DOWN", "admin_state_up=true",
              "admin_state_up=maybe", "mac_address=fa:16:3e:00:00:00", "limit=0", "limit=-1",
              "limit=abc", "marker=not-a-uuid", "security_groups=" + sg_id, "binding:host_id=",
              "revision_number=1", "created_at=2020", "id=" + port_id, "network_id=" + net_id):
        st, body = call(f"4 GET /ports?{q}", c, n, "GET", f"/ports?{q}", show=False)
        summary = (f"{len(body['ports'])} ports, keys {sorted(body)}" if isinstance(body, dict) and "ports" in body
                   else json.dumps(trim(body))[:400])
        print(f"4 GET /ports?{ID.sub('<id>', q)} -> {st} {summary}")

    # 5. tags
    call("5 PUT /networks/{id}/tags", c, n, "PUT", f"/networks/{net_id}/tags", {"tags": ["t1", "t2"]})
    call("5 PUT /networks/{id}/tags/{tag}", c, n, "PUT", f"/networks/{net_id}/tags/t3")
    call("5 POST /networks/{id}/tags (tag-creation extension)", c, n, "POST", f"/networks/{net_id}/tags",
         {"tags": ["t4"]})
    call("5 GET /networks/{id}/tags", c, n, "GET", f"/networks/{net_id}/tags")
    call("5 GET /networks/{id}/tags/{tag} (present)", c, n, "GET", f"/networks/{net_id}/tags/t3")
    call("5 GET /networks/{id}/tags/{tag} (absent)", c, n, "GET", f"/networks/{net_id}/tags/zz")
    call("5 DELETE /networks/{id}/tags/{tag}", c, n, "DELETE", f"/networks/{net_id}/tags/t3")
    call("5 DELETE /networks/{id}/tags/{tag} (absent)", c, n, "DELETE", f"/networks/{net_id}/tags/t3")
    call("5 PUT /networks/{id}/tags bad body", c, n, "PUT", f"/networks/{net_id}/tags", {"tags": "notalist"})
    call("5 DELETE /networks/{id}/tags", c, n, "DELETE", f"/networks/{net_id}/tags")
    call("5 PUT tags on unknown network", c, n, "PUT", f"/networks/{uuid.uuid4()}/tags", {"tags": ["a"]})

    # 8. pagination
    call("8 GET /networks?limit=1", c, n, "GET", "/networks?limit=1")
    call("8 GET /networks?limit=1&page_reverse=true", c, n, "GET", "/networks?limit=1&page_reverse=true")
    call("4 GET /ports/{unknown}", c, n, "GET", f"/ports/{uuid.uuid4()}")
    call("4 DELETE network in use", c, n, "DELETE", f"/networks/{net_id}")


def octavia(c, undo):
    o = "load_balancer"
    net = c.network.create_network(name="probe-lb-net")
    undo.append(lambda: c.network.delete_network(net))
    sub = c.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.78.0.0/24", name="probe-lb-sub")
    undo.append(lambda: c.network.delete_subnet(sub))
    t0 = time.monotonic()
    st, lb = call("6 LB create", c, o, "POST", "/lbaas/loadbalancers",
                  {"loadbalancer": {"name": "probe-lb", "vip_subnet_id": sub.id}})
    lb_id = lb["loadbalancer"]["id"]
    undo.append(lambda: (c.load_balancer.delete_load_balancer(lb_id, cascade=True, ignore_missing=True),
                         c.load_balancer.wait_for_delete(c.load_balancer.get_load_balancer(lb_id), wait=300)))
    call("6 PUT LB while PENDING_CREATE", c, o, "PUT", f"/lbaas/loadbalancers/{lb_id}",
         {"loadbalancer": {"description": "x"}})
    call("6 listener create while LB PENDING_CREATE", c, o, "POST", "/lbaas/listeners",
         {"listener": {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": 80}})
    call("6 DELETE LB while PENDING_CREATE", c, o, "DELETE", f"/lbaas/loadbalancers/{lb_id}")
    seen = []
    while True:
        lbn = c.load_balancer.get_load_balancer(lb_id)
        s = (lbn.provisioning_status, lbn.operating_status)
        if not seen or seen[-1][1] != s:
            seen.append((round(time.monotonic() - t0, 1), s))
        if lbn.provisioning_status in ("ACTIVE", "ERROR") or time.monotonic() - t0 > 300:
            break
        time.sleep(0.25)
    note("6 LB status transitions after create (seconds, (provisioning, operating))", repr(seen))
    t0 = time.monotonic()
    st, ls = call("6 listener create", c, o, "POST", "/lbaas/listeners",
                  {"listener": {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": 6443}})
    call("6 GET LB right after listener create", c, o, "GET", f"/lbaas/loadbalancers/{lb_id}")
    call("6 PUT LB while PENDING_UPDATE", c, o, "PUT", f"/lbaas/loadbalancers/{lb_id}",
         {"loadbalancer": {"description": "x"}})
    call("6 second listener while PENDING_UPDATE", c, o, "POST", "/lbaas/listeners",
         {"listener": {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": 81}})
    call("6 DELETE LB while PENDING_UPDATE", c, o, "DELETE", f"/lbaas/loadbalancers/{lb_id}")
    seen = []
    while True:
        lbn = c.load_balancer.get_load_balancer(lb_id)
        s = (lbn.provisioning_status, lbn.operating_status)
        if not seen or seen[-1][1] != s:
            seen.append((round(time.monotonic() - t0, 1), s))
        if lbn.provisioning_status in ("ACTIVE", "ERROR") or time.monotonic() - t0 > 300:
            break
        time.sleep(0.25)
    note("6 LB status transitions after listener create", repr(seen))
    call("6 listener after ACTIVE", c, o, "GET", f"/lbaas/listeners/{ls['listener']['id']}")
    call("6 DELETE LB with children, no cascade", c, o, "DELETE", f"/lbaas/loadbalancers/{lb_id}")
    call("6 GET unknown LB", c, o, "GET", f"/lbaas/loadbalancers/{uuid.uuid4()}")
    call("6 LB create, unknown subnet", c, o, "POST", "/lbaas/loadbalancers",
         {"loadbalancer": {"name": "probe-bad", "vip_subnet_id": str(uuid.uuid4())}})
    call("6 listener create, bad protocol", c, o, "POST", "/lbaas/listeners",
         {"listener": {"loadbalancer_id": lb_id, "protocol": "NOPE", "protocol_port": 80}})
    call("6 LB list with limit=1", c, o, "GET", "/lbaas/loadbalancers?limit=1")
    t0 = time.monotonic()
    call("6 DELETE LB cascade", c, o, "DELETE", f"/lbaas/loadbalancers/{lb_id}?cascade=true")
    seen = []
    while True:
        st, body = call("6 poll", c, o, "GET", f"/lbaas/loadbalancers/{lb_id}", show=False)
        RESULTS.pop()
        s = body["loadbalancer"]["provisioning_status"] if st == 200 else st
        if not seen or seen[-1][1] != s:
            seen.append((round(time.monotonic() - t0, 1), s))
        if st == 404 or time.monotonic() - t0 > 300:
            break
        time.sleep(0.25)
    note("6 LB after cascade delete", repr(seen))
    call("6 GET deleted LB", c, o, "GET", f"/lbaas/loadbalancers/{lb_id}")


def nova(admin, member, undo):
    cp = "compute"
    net = member.network.create_network(name="probe-vm-net")
    undo.append(lambda: member.network.delete_network(net))
    sub = member.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.79.0.0/24")
    undo.append(lambda: member.network.delete_subnet(sub))
    img = member.image.find_image("cirros-fake") or next(i for i in member.image.images() if i.status == "active")
    fl = member.compute.find_flavor("m1.small") or min(member.compute.flavors(), key=lambda f: (f.ram, f.vcpus))
    srv = lambda name, **kw: {"server": {"name": name, "imageRef": img.id, "flavorRef": fl.id,  # noqa: E731
                                         "networks": [{"uuid": net.id}], **kw}}
    call("7 server create, unknown flavor", member, cp, "POST", "/servers",
         {"server": {**srv("probe-x")["server"], "flavorRef": "no-such-flavor"}}, microversion="2.96")
    call("7 server create, unknown image", member, cp, "POST", "/servers",
         {"server": {**srv("probe-x")["server"], "imageRef": str(uuid.uuid4())}}, microversion="2.96")
    call("7 server create, unknown network", member, cp, "POST", "/servers",
         {"server": {**srv("probe-x")["server"], "networks": [{"uuid": str(uuid.uuid4())}]}},
         microversion="2.96")
    call("7 server create, unknown AZ", member, cp, "POST", "/servers",
         srv("probe-x", availability_zone="no-such-az"), microversion="2.96")
    t0 = time.monotonic()
    st, s1 = call("7 server create", member, cp, "POST", "/servers", srv("probe-vm1"), microversion="2.96")
    ids = [s1["server"]["id"]]
    seen = []
    while True:
        s = member.compute.get_server(ids[0])
        if not seen or seen[-1][1] != (s.status, s.task_state):
            seen.append((round(time.monotonic() - t0, 1), (s.status, s.task_state)))
        if s.status in ("ACTIVE", "ERROR") or time.monotonic() - t0 > 120:
            break
        time.sleep(0.2)
    note("7 server status transitions (seconds, (status, task_state))", repr(seen))
    st, s2 = call("setup server 2", member, cp, "POST", "/servers", srv("probe-vm2"), show=False)
    ids.append(s2["server"]["id"])
    member.compute.wait_for_server(member.compute.get_server(ids[1]), wait=120)
    for i in ids:
        undo.append(lambda i=i: (member.compute.delete_server(i),
                                 member.compute.wait_for_delete(member.compute.get_server(i), wait=120)))
    call("8 GET /servers/detail?limit=1", member, cp, "GET", "/servers/detail?limit=1", microversion="2.96")
    call("8 GET /servers?limit=1", member, cp, "GET", "/servers?limit=1", microversion="2.96")
    call("8 GET /flavors/detail?limit=1", member, cp, "GET", "/flavors/detail?limit=1")

    try:
        project = admin.identity.find_project("capo", domain_id="default")
        old = admin.compute.get_quota_set(project.id)
        admin.compute.update_quota_set(project.id, instances=2)
    except Exception as e:  # noqa: BLE001 -- capo-sim has no admin API
        note("7 quota / NoValidHost probes skipped", f"{type(e).__name__}: {e}")
        call("7 GET unknown server", member, cp, "GET", f"/servers/{uuid.uuid4()}")
        return
    if project is None:
        note("7 quota / NoValidHost probes skipped", "no project capo")
        return
    undo.append(lambda: admin.compute.update_quota_set(project.id, instances=old.instances))
    call("7 server create over the instances quota", member, cp, "POST", "/servers", srv("probe-vm3"),
         microversion="2.96")
    admin.compute.update_quota_set(project.id, instances=old.instances)

    # Lift the RAM/cores quota so the scheduler, not the quota check, refuses the huge flavor.
    admin.compute.update_quota_set(project.id, ram=-1, cores=-1)
    undo.append(lambda: admin.compute.update_quota_set(project.id, ram=old.ram, cores=old.cores))
    big = admin.compute.create_flavor(name="probe-huge", vcpus=1, ram=50_000_000, disk=1)
    undo.append(lambda: admin.compute.delete_flavor(big))
    st, s3 = call("7 server create, flavor no host can fit", member, cp, "POST", "/servers",
                  {"server": {**srv("probe-novalid")["server"], "flavorRef": big.id}}, microversion="2.96")
    if st == 202:
        sid = s3["server"]["id"]
        undo.append(lambda: (member.compute.delete_server(sid),
                             member.compute.wait_for_delete(member.compute.get_server(sid), wait=120)))
        deadline = time.monotonic() + 120
        while member.compute.get_server(sid).status not in ("ERROR", "ACTIVE") and time.monotonic() < deadline:
            time.sleep(0.5)
        st, body = call("7 NoValidHost server (member view)", member, cp, "GET", f"/servers/{sid}",
                        microversion="2.96")
        call("7 NoValidHost server (admin view)", admin, cp, "GET", f"/servers/{sid}", microversion="2.96")
    call("7 GET unknown server", member, cp, "GET", f"/servers/{uuid.uuid4()}")


def keystone(member):
    uid = member.current_user_id
    secret = "probe-" + uuid.uuid4().hex
    created = []
    for name, restricted in (("probe-restricted", True), ("probe-unrestricted", False)):
        st, body = call(f"9 app cred create with password token (unrestricted={not restricted})", member,
                        "identity", "POST", f"/users/{uid}/application_credentials",
                        {"application_credential": {"name": name, "secret": secret,
                                                    "unrestricted": not restricted}})
        if st == 201:
            created.append(body["application_credential"]["id"])
    try:
        for ac_id, kind in zip(created, ("restricted", "unrestricted")):
            ac = openstack.connect(auth_type="v3applicationcredential", auth={
                "auth_url": member.config.auth["auth_url"], "application_credential_id": ac_id,
                "application_credential_secret": secret}, region_name="RegionOne")
            st, body = call(f"9 app cred create with a {kind} app-cred token", ac, "identity", "POST",
                            f"/users/{uid}/application_credentials",
                            {"application_credential": {"name": f"probe-from-{kind}", "secret": secret}})
            if st == 201:
                created.append(body["application_credential"]["id"])
            call(f"9 app cred delete with a {kind} app-cred token", ac, "identity", "DELETE",
                 f"/users/{uid}/application_credentials/{created[-1]}")
            call(f"9 app cred list with a {kind} app-cred token", ac, "identity", "GET",
                 f"/users/{uid}/application_credentials", show=False)
        call("9 app cred create, duplicate name", member, "identity", "POST",
             f"/users/{uid}/application_credentials",
             {"application_credential": {"name": "probe-restricted", "secret": secret}})
        call("9 token with wrong app-cred secret", member, "identity", "POST", "/auth/tokens",
             {"auth": {"identity": {"methods": ["application_credential"], "application_credential": {
                 "id": created[0], "secret": "wrong"}}}}, authenticated=False)
    finally:
        for ac_id in created:
            try:
                member.identity.delete_application_credential(uid, ac_id)
            except Exception:  # noqa: BLE001
                pass


if __name__ == "__main__":
    main()
