"""The container entrypoint: ``python -m rewardkit_trainers.sagemaker``.

One process per node. It reads the run spec and the node's place in the cluster,
resumes from the newest checkpoint step every node flagged complete, forms the Ray
cluster when the backend needs one, runs the training command (or, on a Ray worker
node, waits for the head), syncs complete checkpoints to S3 in the background, and on
success merges and uploads the final model. A failure is written to
``/opt/ml/output/failure`` (``REWARDKIT_FAILURE_FILE``), which SageMaker reports as
the job's failure reason.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from rewardkit.execution.ray_cluster import AUTH_MODE_ENV, with_auth_mode

from rewardkit_trainers.launch.hardware import split_gpus
from rewardkit_trainers.launch.runner import stop_group, wait_ready
from rewardkit_trainers.launch.segments import segment_to_resume
from rewardkit_trainers.launch.swift_server import server_for_command, with_server
from rewardkit_trainers.sagemaker import ray_cluster
from rewardkit_trainers.sagemaker.commands import (
    CONFIG_DIR,
    Placement,
    detect_gpus,
    fill,
    launcher_files,
    training_command,
)
from rewardkit_trainers.sagemaker.config import RAY_BACKENDS
from rewardkit_trainers.sagemaker.layouts import CheckpointLayout, layout_for
from rewardkit_trainers.sagemaker.spec import RunSpec, Stage
from rewardkit_trainers.sagemaker.store import CheckpointStore, upload_tree
from rewardkit_trainers.sagemaker.sync import CheckpointSync
from rewardkit_trainers.sagemaker.topology import (
    Topology,
    TopologyError,
    host_resolver,
    load_topology,
    resolve_with_retries,
)

log = logging.getLogger("rewardkit.sagemaker")

DEFAULT_FAILURE_FILE = "/opt/ml/output/failure"
EXIT_TERMINATED = 128 + signal.SIGTERM


class RunFailed(RuntimeError):
    """A failure worth reporting as the job's failure reason."""


def write_failure(message: str, env: dict[str, str] | None = None) -> None:
    """Write the failure reason where SageMaker reads it (first 1024 bytes are shown)."""
    env = dict(os.environ) if env is None else env
    path = Path(env.get("REWARDKIT_FAILURE_FILE") or DEFAULT_FAILURE_FILE)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(message + "\n", encoding="utf-8")
    except OSError as exc:
        log.error("cannot write the failure file %s: %s", path, exc)


def _s3_client() -> Any:
    import boto3

    return boto3.client("s3")


class NodeRun:
    """Everything one node does for one job attempt."""

    def __init__(self, spec: RunSpec, topology: Topology, env: dict[str, str]) -> None:
        self.spec = spec
        self.topology = topology
        self.env = env
        self.layout: CheckpointLayout = layout_for(spec.backend)
        self.root = Path(env.get("REWARDKIT_CHECKPOINT_DIR") or spec.checkpoint_dir)
        self.stop = threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.ray_mode = spec.backend in RAY_BACKENDS and topology.num_nodes > 1
        self.job = env.get("TRAINING_JOB_NAME", "local")
        self.s3: Any = _s3_client() if (spec.checkpoint_s3 or spec.output_s3) else None
        self.store = (
            CheckpointStore(self.s3, spec.checkpoint_s3, self.layout, topology.num_nodes)
            if spec.checkpoint_s3
            else None
        )
        self.where_label = f"{topology.current_host} (rank {topology.rank})"
        self.resumed: int | None = None
        spec_path = env.get("REWARDKIT_RUN_SPEC")
        self.config_dir = str(Path(spec_path).parent) if spec_path else CONFIG_DIR
        """the config channel: where the run spec and the stage reward files are"""

    # -- signals -----------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: Any) -> None:
        log.warning("received signal %s: stopping training, syncing complete checkpoints", signum)
        self.stop.set()
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    # -- steps -------------------------------------------------------------------------
    def resume(self) -> int | None:
        """Download the newest step every node flagged, if any; returns its number.

        The head also deletes the steps after it: partial uploads of the interrupted
        attempt, which this attempt will write again.
        """
        if self.store is None:
            return None
        step = self.store.latest_complete()
        if self.topology.is_head:
            stale = [s for s in self.store.flags() if step is None or s > step]
            for old in stale:
                self.store.delete_step(old)
            if stale:
                log.info("removed partial steps %s of the previous attempt", stale)
        if step is None:
            log.info("no complete checkpoint in S3: starting from scratch")
            return None
        folder = self.root / self.layout.step_dir_name(step)
        if not folder.exists():
            self.store.download_step(step, self.root)
        self.layout.write_tracker(self.root, step)
        log.info("resuming from step %s (%s)", step, folder)
        return step

    def run_command(self, argv: list[str], extra_env: dict[str, str]) -> tuple[int, list[str]]:
        """Run a command (training, merge), echoing its output; returns (exit code, last
        lines). It gets its own process group, which a signal stops as a whole."""
        log.info("running: %s", " ".join(argv))
        tail: collections.deque[str] = collections.deque(maxlen=20)
        if self.stop.is_set():
            return EXIT_TERMINATED, ["stopped before training started"]
        try:
            self.proc = subprocess.Popen(
                argv,
                env={**self.env, **extra_env},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                process_group=0,
            )
        except OSError as exc:
            return 127, [f"cannot start {argv[0]}: {exc}"]
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            sys.stdout.buffer.write(raw)
            sys.stdout.flush()
            tail.append(raw.decode("utf-8", "replace").rstrip())
        return self.proc.wait(), list(tail)

    def final_model(self) -> None:
        """Head: merge (sharded backends) and upload the final model to the output path."""
        if self.spec.output_s3 is None:
            return
        dest = f"{self.spec.output_s3}/{self.job}/final-model"
        if not self.layout.sharded:
            count = upload_tree(self.s3, self.root, dest, skip=(self.layout.step_prefix,))
            log.info("uploaded the final model (%s files) to %s", count, dest)
            return
        step = max(self.layout.complete_steps(self.root), default=None)
        if step is None:
            raise RunFailed("training ended without a complete checkpoint to merge")
        step_dir = self.root / self.layout.step_dir_name(step)
        if self.store is not None and self.topology.num_nodes > 1:
            deadline = time.monotonic() + self.spec.final_wait_s
            while self.store.latest_complete() != step:
                if time.monotonic() > deadline:
                    raise RunFailed(
                        f"not every node flagged the final step {step} within "
                        f"{self.spec.final_wait_s:.0f}s; the model was not merged"
                    )
                time.sleep(min(self.spec.poll_interval_s, 5.0))
            if self.spec.keep_last:
                self.store.prune(self.spec.keep_last)
            merge_root = self.root.parent / (self.root.name + "-final")
            step_dir = self.store.download_step(step, merge_root)
        local_dir = step_dir / self.layout.model_subdir
        command = fill(
            self.spec.merge_command or list(self.layout.merge_command),
            {"local_dir": str(local_dir)},
        )
        log.info("merging the final model: %s", " ".join(command))
        rc, tail = self.run_command(command, {})
        if rc != 0:
            raise RunFailed(f"model merge failed with exit code {rc}: " + "\n".join(tail[-5:]))
        count = upload_tree(self.s3, local_dir / "huggingface", dest)
        log.info("uploaded the merged model (%s files) to %s", count, dest)

    # -- roles -------------------------------------------------------------------------
    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        resolve = host_resolver(self.env)
        head_ip = resolve_with_retries(self.topology.head_host, resolve)
        node_ip = resolve_with_retries(self.topology.current_host, resolve)
        self.root.mkdir(parents=True, exist_ok=True)
        resume_step = self.resumed = self.resume()
        if self.ray_mode and not self.topology.is_head:
            return self.run_ray_worker(head_ip, node_ip)
        status = None
        head_node = None
        try:
            if self.ray_mode:
                head_node = ray_cluster.start_node(node_ip, self.spec.ray_port, None, self.env)
                ray_cluster.wait_until_listening(head_node, head_ip, self.spec.ray_port, 120)
                ray_cluster.connect(f"{head_ip}:{self.spec.ray_port}", timeout_s=120)
                status = ray_cluster.create_status()
                try:
                    ray_cluster.wait_for_nodes(self.topology.num_nodes, self.spec.join_timeout_s)
                except ray_cluster.ClusterError as exc:
                    status.set_state.remote("failed", str(exc))
                    raise RunFailed(str(exc)) from None
                status.set_state.remote("running")
            return self.run_trainer(head_ip, resume_step, status)
        finally:
            if head_node is not None:
                import ray

                ray.shutdown()
                ray_cluster.stop_node(head_node)

    def run_trainer(self, head_ip: str, resume_step: int | None, status: Any) -> int:
        gpus = self.spec.gpus_per_node or detect_gpus(self.env)
        where = Placement(self.topology.rank, self.topology.num_nodes, head_ip, gpus)
        for path, text in launcher_files(self.spec, where, self.root).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        sync = None
        if self.store is not None:
            publish = (lambda s: status.set_step.remote(s)) if status is not None else None
            sync = CheckpointSync(
                self.store,
                self.root,
                self.topology.rank,
                self.spec.sync_interval_s,
                self.spec.keep_last if self.topology.is_head else None,
                on_complete=publish,
                resumed=resume_step,
            ).start()
        try:
            rc, tail = self.run_stages(where, resume_step)
        except RunFailed as exc:
            if status is not None:  # Ray worker nodes leave when the head says so
                status.set_state.remote("failed", str(exc).splitlines()[0])
            raise
        finally:
            if sync is not None:
                uploaded = sync.stop()
                log.info("last checkpoint sync uploaded steps %s", uploaded or "none")
        if self.stop.is_set():
            if status is not None:
                status.set_state.remote("failed", "interrupted")
            log.warning("stopped by signal after syncing complete checkpoints")
            return EXIT_TERMINATED
        if rc != 0:
            if status is not None:
                status.set_state.remote("failed", f"exit code {rc}")
            raise RunFailed(
                f"training command failed with exit code {rc} on {self.where_label}:\n"
                + "\n".join(tail[-10:])
            )
        if status is not None:
            import ray

            ray.get(status.set_state.remote("succeeded"))
        if self.topology.is_head:
            self.final_model()
        return 0

    def run_stages(self, where: Placement, resume_step: int | None) -> tuple[int, list[str]]:
        """Run the training command once, or once per stage of a staged run: from the
        stage the resume step belongs to, each later stage resuming from the step the
        previous one ended at. Returns the last command's (exit code, last lines)."""
        stages: list[Stage | None] = list(self.spec.stages) or [None]
        ranges = [(s.start, s.end) if s else (0, None) for s in stages]
        first = segment_to_resume(ranges, resume_step)
        rc = 0
        tail: list[str] = []
        for k in range(first, len(stages)):
            stage = stages[k]
            if stage is not None:
                log.info("stage %s of %s: steps %s..%s, reward pinned to step %s%s", k + 1,
                         len(stages), stage.start, stage.end if stage.end is not None
                         else "end", stage.start,
                         f", resumes from step {resume_step}" if resume_step else "")
            argv, extra = training_command(self.spec, where, self.root, resume_step,
                                           self.config_dir, stage)
            rc, tail = self.run_training(argv, extra, where)
            if rc != 0 or self.stop.is_set() or stage is None or stage.end is None:
                return rc, tail
            if stage.end not in self.layout.complete_steps(self.root):
                raise RunFailed(
                    f"stage {k + 1} of {len(stages)} ended without a complete checkpoint of "
                    f"step {stage.end} in {self.root}, which stage {k + 2} resumes from "
                    "(the command must save the last step of a run: a positive "
                    "trainer.save_freq, and a step count past the last stage boundary)")
            resume_step = stage.end
        return rc, tail

    def run_training(self, argv: list[str], extra_env: dict[str, str],
                     where: Placement) -> tuple[int, list[str]]:
        """The training command; a ``swift rlhf --vllm_mode server`` command gets its
        ``swift rollout`` server first, on the node's last GPUs, stopped afterwards."""
        try:
            server = server_for_command(argv) if self.spec.backend == "swift" else None
        except ValueError as exc:
            raise RunFailed(f"sagemaker.command: {exc}") from None
        if server is None:
            return self.run_command(argv, extra_env)
        if where.num_nodes > 1:
            raise RunFailed("sagemaker.command: swift --vllm_mode server starts swift rollout "
                            "on the node it trains on, which rewardkit supports on one node "
                            "only; use --vllm_mode colocate on several nodes")
        try:
            trainer_ids, server_ids = split_gpus(where.gpus_per_node,
                                                 server.tensor_parallel_size)
        except ValueError as exc:
            raise RunFailed(f"sagemaker.command: {exc}") from None
        log.info("starting the rollout server: %s", " ".join(server.argv))
        try:
            proc = subprocess.Popen(
                server.argv, env={**self.env, **extra_env,
                                  "CUDA_VISIBLE_DEVICES": ",".join(map(str, server_ids))},
                process_group=0)
        except OSError as exc:
            return 127, [f"cannot start {server.argv[0]}: {exc}"]
        try:
            problem = wait_ready(proc, server.ready_url, self.spec.server_ready_timeout_s,
                                 self.stop)
            if problem is not None:
                if self.stop.is_set():
                    return EXIT_TERMINATED, [problem]
                raise RunFailed(f"the rollout server (swift rollout) {problem}")
            log.info("rollout server ready at %s", server.ready_url)
            env = {**extra_env, "CUDA_VISIBLE_DEVICES": ",".join(map(str, trainer_ids)),
                   "NPROC_PER_NODE": str(len(trainer_ids))}
            return self.run_command(with_server(argv, server), env)
        finally:
            stop_group(proc)
            log.info("rollout server stopped")

    def run_ray_worker(self, head_ip: str, node_ip: str) -> int:
        worker = ray_cluster.Worker(head_ip, self.spec.ray_port, node_ip, self.env)
        try:
            worker.join(self.spec.connect_timeout_s)
        except (TopologyError, ray_cluster.ClusterError) as exc:
            raise RunFailed(
                f"{self.where_label} cannot join the head {self.topology.head_host} "
                f"({head_ip}:{self.spec.ray_port}): {exc}"
            ) from None
        resume_step = self.resumed
        sync = None
        if self.store is not None:
            sync = CheckpointSync(
                self.store,
                self.root,
                self.topology.rank,
                self.spec.sync_interval_s,
                published=lambda: worker.last.get("step"),
                resumed=resume_step,
            ).start()
        try:
            outcome = worker.wait_until_done(
                self.spec.poll_interval_s, self.spec.head_lost_after_s, stop=self.stop
            )
            log.info("%s: training ended (%s)", self.where_label, outcome)
            if sync is not None:
                sync.stop()
        finally:
            worker.leave()
        return EXIT_TERMINATED if outcome == "stopped" else 0


def main(argv: list[str] | None = None) -> int:
    """Run this node's part of the job; the exit code is the node's result."""
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s rewardkit.sagemaker %(levelname)s %(message)s",
    )
    # every Ray process of the job (both ``ray start``s, the drivers, this process's
    # ray.init) under one mode, whatever each container's home folder holds
    env = with_auth_mode(dict(os.environ))
    os.environ[AUTH_MODE_ENV] = env[AUTH_MODE_ENV]
    try:
        spec = RunSpec.load()
        topology = load_topology(env)
        return NodeRun(spec, topology, env).run()
    except (RunFailed, TopologyError, ray_cluster.ClusterError, FileNotFoundError) as exc:
        message = f"rewardkit: {exc}"
        log.error("%s", message)
        write_failure(message, env)
        return 1
    except Exception as exc:
        message = f"rewardkit: unexpected {type(exc).__name__}: {exc}"
        log.exception("%s", message)
        write_failure(message, env)
        return 1
