"""Nova's fake virt driver with a compute node identity that survives restarts.

The upstream FakeDriver names its node after the host but takes the node UUID from a random
per-process sentinel and never writes the `compute_id` file. Nova then refuses to restart the
service ("No local node identity found, but this is not our first startup on this host").
Here the UUID is derived from the node name (uuid5), and written to `<state_path>/compute_id` on
first start, so a stopped environment can be started again on the same databases.

Nova imports compute drivers as `nova.virt.<compute_driver>`, so hack/openstack-env.sh drops a
one-line module `nova/virt/capo_fake.py` re-exporting this class, and nova.conf says
`compute_driver = capo_fake.StableFakeDriver`.
"""

import uuid

from nova.virt import fake
from nova.virt import node as node_identity

_NAMESPACE = uuid.UUID("5a1b6c0e-3c2f-4f6e-9a51-6361706f2d6f")  # fixed, arbitrary


def node_uuid(nodename: str) -> str:
    """The UUID a fake node always has."""
    return str(uuid.uuid5(_NAMESPACE, nodename))


class StableFakeDriver(fake.FakeDriver):
    """FakeDriver whose single node keeps its UUID across process restarts."""

    def init_host(self, host):
        super().init_host(host)
        if node_identity.read_local_node_uuid() is None:
            node_identity.write_local_node_uuid(node_uuid(self._nodes[0]))

    def get_available_resource(self, nodename):
        resources = super().get_available_resource(nodename)
        resources["uuid"] = node_uuid(nodename)
        return resources

    def get_nodenames_by_uuid(self, refresh=False):
        return {node_uuid(name): name for name in self._nodes}
