"""Shims for running real OpenStack services as a loopback test partner for capo.

neutron_agentless  ML2 mechanism driver that plays the part of the missing L2/L3 agents
cinder_noop        Cinder volume driver whose data path does nothing
nova_fake          Nova fake virt driver whose compute node keeps its identity across restarts

Nothing here is meant for a real cloud.
"""
