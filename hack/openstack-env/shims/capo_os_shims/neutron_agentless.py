"""ML2 mechanism driver `capo_agentless`: Neutron without any agent, for the loopback test partner.

A real deployment runs OVS/OVN and L3 agents; they bind ports, wire trunks and report floating IP
status. Without them Neutron refuses to bind ports (Nova fails with PortBindingFailed), the trunk
service plugin refuses to load (no compatible trunk driver), and trunks and floating IPs stay DOWN.
This driver stands in for the agents' control-plane side only -- no packet ever moves:

* every port is bound on whatever host asks (vif_type "other", status ACTIVE), on the first
  segment offered;
* an agentless trunk driver is registered so the trunk plugin loads; a trunk is ACTIVE while its
  parent port is bound to a host and DOWN otherwise;
* a floating IP is ACTIVE while it is associated with a port and DOWN otherwise, as the L3
  agent would report it (shortly after the API call that changed it, like the agent).

Use: [ml2] mechanism_drivers = capo_agentless (entry point registered by this package).
"""

from neutron_lib import constants
from neutron_lib.api.definitions import portbindings
from neutron_lib.callbacks import events
from neutron_lib.callbacks import registry
from neutron_lib.callbacks import resources
from neutron_lib.plugins import constants as plugin_constants
from neutron_lib.plugins import directory
from neutron_lib.plugins.ml2 import api
from neutron_lib.services.trunk import constants as trunk_constants
from oslo_config import cfg
from oslo_log import log as logging

from neutron.objects import trunk as trunk_objects
from neutron.services.trunk.drivers import base as trunk_base

LOG = logging.getLogger(__name__)
DRIVER_NAME = "capo_agentless"


class AgentlessTrunkDriver(trunk_base.DriverBase):
    """Trunk driver with no agent type: the trunk plugin accepts it as long as ML2 loads us."""

    @property
    def is_loaded(self):
        return DRIVER_NAME in cfg.CONF.ml2.mechanism_drivers

    @classmethod
    def create(cls):
        return cls(DRIVER_NAME,
                   interfaces=(portbindings.VIF_TYPE_OTHER, portbindings.VIF_TYPE_OVS),
                   segmentation_types=(trunk_constants.SEGMENTATION_TYPE_VLAN,),
                   agent_type=None, can_trunk_bound_port=True)


def _is_bound(port):
    return bool(port.get(portbindings.HOST_ID))


def _sync_trunk_status(context, trunk, parent_bound):
    wanted = (trunk_constants.TRUNK_ACTIVE_STATUS if parent_bound
              else trunk_constants.TRUNK_DOWN_STATUS)
    if trunk.status != wanted:
        trunk.update(status=wanted)


def _on_trunk_created(resource, event, trigger, payload=None):
    trunk = payload.latest_state
    context = payload.context.elevated()
    parent = directory.get_plugin().get_port(context, trunk.port_id)
    _sync_trunk_status(context, trunk, _is_bound(parent))


def _on_port_updated(resource, event, trigger, payload=None):
    port = payload.latest_state
    context = payload.context.elevated()
    trunk = trunk_objects.Trunk.get_object(context, port_id=port["id"])
    if trunk is not None:
        _sync_trunk_status(context, trunk, _is_bound(port))


def _on_floatingip_changed(resource, event, trigger, payload=None):
    fip = payload.latest_state
    wanted = (constants.FLOATINGIP_STATUS_ACTIVE if fip.get("port_id")
              else constants.FLOATINGIP_STATUS_DOWN)
    if fip.get("status") == wanted:
        return
    l3 = directory.get_plugin(plugin_constants.L3)
    if l3 is not None:
        l3.update_floatingip_status(payload.context.elevated(), fip["id"], wanted)


class AgentlessMechanismDriver(api.MechanismDriver):
    """Binds every port; keeps trunk and floating IP status as the agents would."""

    def initialize(self):
        # Keep a reference: the trunk driver registers itself on the trunk plugin's AFTER_INIT.
        self.trunk_driver = AgentlessTrunkDriver.create()
        registry.subscribe(_on_trunk_created, resources.TRUNK, events.AFTER_CREATE)
        registry.subscribe(_on_port_updated, resources.PORT, events.AFTER_UPDATE)
        registry.subscribe(_on_floatingip_changed, resources.FLOATING_IP, events.AFTER_CREATE)
        registry.subscribe(_on_floatingip_changed, resources.FLOATING_IP, events.AFTER_UPDATE)
        LOG.info("capo_agentless: binding every port without agents (test partner only)")

    @property
    def connectivity(self):
        return portbindings.CONNECTIVITY_L2

    def bind_port(self, context):
        for segment in context.segments_to_bind:
            context.set_binding(segment[api.ID], portbindings.VIF_TYPE_OTHER, {},
                                status=constants.PORT_STATUS_ACTIVE)
            return
