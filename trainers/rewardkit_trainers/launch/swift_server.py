"""ms-swift's vLLM server mode: ``swift rollout`` beside ``swift rlhf``.

With ``vllm.mode: server`` (``--vllm_mode server``), ms-swift generates through a
separate ``swift rollout`` process (ms-swift 4.x ``swift.pipelines.infer.rollout``): a
FastAPI server on ``--host``/``--port`` that answers ``GET /health/`` once every vLLM
worker is ready, and to which the trainer syncs its weights. It takes
``vllm_tensor_parallel_size x vllm_data_parallel_size`` GPUs; the trainer connects with
``--vllm_mode server --vllm_server_host H --vllm_server_port P`` and trains on the others.

``rewardkit train`` (:func:`rewardkit_trainers.launch.swift.build_jobs`) and the SageMaker
entrypoint (:func:`server_for_command`, for a custom ``swift rlhf`` command) start the
server in the background on the node's last GPUs, wait until ``/health/`` answers
(:func:`rewardkit_trainers.launch.runner.wait_ready`), run training on the remaining GPUs, and
stop the server afterwards, on a failure or on SIGTERM too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HOST = "127.0.0.1"
"""The server listens on loopback: trainer and server share the node."""


@dataclass(frozen=True)
class RolloutServer:
    """One ``swift rollout`` process and how the trainer reaches it."""

    model: str
    port: int = 8000
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float | None = None
    extra: list[str] = field(default_factory=list)
    """further ``swift rollout`` arguments (e.g. ``--vllm_max_model_len``)"""

    @property
    def argv(self) -> list[str]:
        argv = ["swift", "rollout", "--model", self.model,
                "--vllm_tensor_parallel_size", str(self.tensor_parallel_size)]
        if self.gpu_memory_utilization is not None:
            argv += ["--vllm_gpu_memory_utilization", repr(self.gpu_memory_utilization)]
        return [*argv, *self.extra, "--host", HOST, "--port", str(self.port)]

    @property
    def ready_url(self) -> str:
        return f"http://{HOST}:{self.port}/health/"

    def client_args(self) -> list[str]:
        """The ``swift rlhf`` arguments that send generation to this server."""
        return ["--use_vllm", "true", "--vllm_mode", "server",
                "--vllm_server_host", HOST, "--vllm_server_port", str(self.port)]


def flag_value(argv: list[str], flag: str) -> str | None:
    """The value after the last ``flag`` (``--flag v`` or ``--flag=v``) in ``argv``."""
    found = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith(flag + "="):
            found = arg.split("=", 1)[1]
    return found


def server_for_command(argv: list[str]) -> RolloutServer | None:
    """The rollout server a custom ``swift rlhf ... --vllm_mode server`` command needs
    (its ``--model``, ``--vllm_server_port`` (default 8000) and
    ``--vllm_tensor_parallel_size``); None for any other command. ValueError when the
    command names a remote server or no model."""
    if argv[:2] != ["swift", "rlhf"] or flag_value(argv, "--vllm_mode") != "server":
        return None
    host = flag_value(argv, "--vllm_server_host")
    if host not in (None, HOST, "localhost"):
        raise ValueError(f"--vllm_server_host {host}: the command names a server elsewhere; "
                         "rewardkit starts swift rollout on the node itself (leave it out)")
    model = flag_value(argv, "--model")
    if model is None:
        raise ValueError("swift rlhf --vllm_mode server without --model: the rollout server "
                         "needs the model")
    return RolloutServer(model, int(flag_value(argv, "--vllm_server_port") or 8000),
                         int(flag_value(argv, "--vllm_tensor_parallel_size") or 1))


def with_server(argv: list[str], server: RolloutServer) -> list[str]:
    """A ``swift rlhf`` command pointed at ``server`` (host and port added when absent)."""
    out = list(argv)
    if flag_value(out, "--vllm_server_host") is None:
        out += ["--vllm_server_host", HOST]
    if flag_value(out, "--vllm_server_port") is None:
        out += ["--vllm_server_port", str(server.port)]
    return out
