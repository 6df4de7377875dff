"""Imported by the simulation workers' server before it forks any worker (see
:func:`tpdisc.executors.worker_server.start_worker_server`): numba loads there once, and every
worker forked from it starts ready to run the agents' kernels."""

from tpdisc.agents.compiled import load_kernels

load_kernels()
