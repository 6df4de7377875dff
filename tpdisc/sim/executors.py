"""The executors' old import path, kept for scripts that still use it: they live in
:mod:`tpdisc.executors` (``base``, ``serial``, ``process``, ``ray``, ``make``)."""

from tpdisc.executors.base import Executor
from tpdisc.executors.make import EXECUTORS, make_executor
from tpdisc.executors.process import ProcessExecutor
from tpdisc.executors.ray import RayExecutor
from tpdisc.executors.serial import SerialExecutor

__all__ = [
    "EXECUTORS",
    "Executor",
    "ProcessExecutor",
    "RayExecutor",
    "SerialExecutor",
    "make_executor",
]
