"""Remote runners: programs run by a provider's HTTP API instead of the local pool.

``SandboxFusionRunner``, ``PistonRunner``, ``Judge0Runner`` and ``E2BRunner`` share
``RemoteRunner``: one node-wide ``ExecutionBudget`` slot per run, one deadline per
request, ``Retry-After`` honoured, and every failure of the provider a
``Status.SANDBOX_ERROR`` with a reason.  They take the same ``RemoteOptions`` (language,
limits, budget, headers, waits), then their provider's own keywords.
"""

from rewardkit_sandbox.remote.base import RemoteOptions, RemoteRunner
from rewardkit_sandbox.remote.e2b import E2BRunner
from rewardkit_sandbox.remote.http import HttpClient, RemoteError
from rewardkit_sandbox.remote.judge0 import Judge0Runner
from rewardkit_sandbox.remote.piston import PistonRunner
from rewardkit_sandbox.remote.sandbox_fusion import SandboxFusionRunner

__all__ = [
    "E2BRunner",
    "HttpClient",
    "Judge0Runner",
    "PistonRunner",
    "RemoteError",
    "RemoteOptions",
    "RemoteRunner",
    "SandboxFusionRunner",
]
