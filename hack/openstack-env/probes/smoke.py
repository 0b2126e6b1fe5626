"""End-to-end smoke test of a running hack/openstack-env.sh as the non-admin cloud `capo-real`.

    OS_CLIENT_CONFIG_FILE=<clouds.yaml> <venv>/bin/python hack/openstack-env/probes/smoke.py

Creates a network, subnet, router on `public`, security group, trunk, a server in each
availability zone, a volume from the image, floating IPs and an Octavia load balancer with a
floating IP on its VIP; prints how long each step took; deletes everything again.
"""

import sys
import time
import uuid

import openstack

T0 = time.monotonic()


def step(msg, t):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg} ({time.monotonic() - t:.2f}s)", flush=True)


def main():
    c = openstack.connect(cloud="capo-real")
    s = "smoke-" + uuid.uuid4().hex[:6]
    cleanup = []
    try:
        t = time.monotonic()
        c.authorize()
        step("token", t)
        t = time.monotonic()
        net = c.network.create_network(name=s)
        cleanup.append(lambda: c.network.delete_network(net))
        sub = c.network.create_subnet(network_id=net.id, ip_version=4, cidr="10.7.0.0/24", name=s)
        pub = c.network.find_network("public")
        rtr = c.network.create_router(name=s, external_gateway_info={"network_id": pub.id})
        cleanup.append(lambda: c.network.delete_router(rtr))
        c.network.add_interface_to_router(rtr, subnet_id=sub.id)
        cleanup.append(lambda: c.network.remove_interface_from_router(rtr, subnet_id=sub.id))
        sg = c.network.create_security_group(name=s)
        cleanup.append(lambda: c.network.delete_security_group(sg))
        c.network.create_security_group_rule(security_group_id=sg.id, direction="ingress",
                                             protocol="tcp", port_range_min=6443, port_range_max=6443)
        step("network, subnet, router+gateway+interface, security group", t)

        t = time.monotonic()
        parent = c.network.create_port(network_id=net.id, name=s + "-parent", security_group_ids=[sg.id])
        cleanup.append(lambda: c.network.delete_port(parent))
        child = c.network.create_port(network_id=net.id, name=s + "-child")
        cleanup.append(lambda: c.network.delete_port(child))
        trunk = c.network.create_trunk(port_id=parent.id, name=s, sub_ports=[
            {"port_id": child.id, "segmentation_type": "vlan", "segmentation_id": 100}])
        cleanup.append(lambda: c.network.delete_trunk(trunk))
        step(f"trunk {trunk.status}", t)

        img = c.image.find_image("cirros-fake")
        fl = c.compute.find_flavor("m1.small")
        azs = sorted(z.name for z in c.compute.availability_zones())
        print("availability zones:", azs)
        servers = []
        t = time.monotonic()
        for i, az in enumerate(azs):
            nics = [{"port": parent.id}] if i == 0 else [{"uuid": net.id}]
            srv = c.compute.create_server(name=f"{s}-{az}", image_id=img.id, flavor_id=fl.id,
                                          networks=nics, availability_zone=az)
            servers.append(srv)
            cleanup.append(lambda srv=srv: (c.compute.delete_server(srv),
                                            c.compute.wait_for_delete(srv, wait=120)))
        for srv in servers:
            srv = c.compute.wait_for_server(srv, wait=120, interval=0.5)
            print(f"  server {srv.name} {srv.status} az={srv.availability_zone} host={srv.hypervisor_hostname}")
        step("servers ACTIVE", t)
        trunk = c.network.get_trunk(trunk.id)
        print("  trunk after boot:", trunk.status, "parent port:", c.network.get_port(parent.id).status)

        t = time.monotonic()
        vol = c.block_storage.create_volume(size=1, image_id=img.id, name=s)
        cleanup.append(lambda: c.block_storage.delete_volume(vol))
        vol = c.block_storage.wait_for_status(vol, "available", wait=120, interval=0.5)
        step(f"volume from image {vol.status} az={vol.availability_zone}", t)

        t = time.monotonic()
        fip = c.network.create_ip(floating_network_id=pub.id, port_id=parent.id)
        cleanup.append(lambda: c.network.delete_ip(fip))
        time.sleep(1)
        step(f"floating ip {fip.floating_ip_address} {c.network.get_ip(fip.id).status}", t)

        t = time.monotonic()
        lb = c.load_balancer.create_load_balancer(name=s, vip_subnet_id=sub.id)
        cleanup.append(lambda: (c.load_balancer.delete_load_balancer(lb.id, cascade=True),
                                c.load_balancer.wait_for_delete(lb, wait=300)))
        lb = c.load_balancer.wait_for_load_balancer(lb.id, wait=300, interval=0.5)
        step(f"load balancer {lb.provisioning_status} vip {lb.vip_address}", t)
        t = time.monotonic()
        ls = c.load_balancer.create_listener(loadbalancer_id=lb.id, protocol="TCP", protocol_port=6443, name=s)
        c.load_balancer.wait_for_load_balancer(lb.id, wait=300, interval=0.5)
        pool = c.load_balancer.create_pool(listener_id=ls.id, protocol="TCP", lb_algorithm="ROUND_ROBIN", name=s)
        c.load_balancer.wait_for_load_balancer(lb.id, wait=300, interval=0.5)
        c.load_balancer.create_member(pool, address="10.7.0.10", protocol_port=6443, subnet_id=sub.id)
        c.load_balancer.wait_for_load_balancer(lb.id, wait=300, interval=0.5)
        lbfip = c.network.create_ip(floating_network_id=pub.id, port_id=lb.vip_port_id)
        cleanup.append(lambda: c.network.delete_ip(lbfip))
        step(f"listener, pool, member; vip fip {lbfip.floating_ip_address}", t)
        print("SMOKE OK")
    finally:
        t = time.monotonic()
        for undo in reversed(cleanup):
            try:
                undo()
            except Exception as e:  # keep cleaning up
                print("cleanup:", type(e).__name__, e, file=sys.stderr)
        step("cleanup", t)


if __name__ == "__main__":
    main()
