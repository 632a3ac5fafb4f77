"""Background upload of complete checkpoints from one node, with its completion flags."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from rewardkit_trainers.sagemaker.store import CheckpointStore

log = logging.getLogger("rewardkit.sagemaker")


class CheckpointSync:
    """Upload each step once it is complete on this node's disk, then flag it.

    Runs :meth:`sync_once` every ``interval_s`` seconds in a thread, and once more on
    :meth:`stop` (spot interruption, end of training). The head (rank 0) also prunes
    S3 to ``keep_last`` complete steps. ``resumed`` is the step the run resumed from.
    ``published`` returns the newest step the head declared complete; on Ray worker
    nodes (no tracker of their own) that step is flagged even when this node holds no
    files for it, so the step can complete.
    """

    def __init__(
        self,
        store: CheckpointStore,
        root: Path,
        rank: int,
        interval_s: float = 30.0,
        keep_last: int | None = None,
        published: Callable[[], int | None] | None = None,
        on_complete: Callable[[int], None] | None = None,
        resumed: int | None = None,
    ) -> None:
        self.store = store
        self.layout = store.layout
        self.root = root
        self.rank = rank
        self.interval_s = interval_s
        self.keep_last = keep_last
        self.published = published or (lambda: None)
        self.on_complete = on_complete
        # steps this node already flagged, up to the one the run resumed from (later
        # flags belong to an interrupted attempt and are written again)
        self.synced: set[int] = {
            s
            for s, r in store.flags().items()
            if rank in r and resumed is not None and s <= resumed
        }
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sync_once(self) -> list[int]:
        """Upload and flag every complete, not yet flagged step; returns those steps."""
        with self._lock:
            published = self.published()
            steps = set(self.layout.complete_steps(self.root, published))
            if published is not None and self.layout.tracker is not None:
                steps.add(published)
            done = []
            for step in sorted(steps - self.synced):
                try:
                    files = self.store.upload_step(self.root, step, self.rank)
                except FileNotFoundError:
                    log.warning("step %s vanished while uploading (pruned); not flagged", step)
                    continue
                self.synced.add(step)
                done.append(step)
                log.info("rank %s: uploaded step %s (%s files), flagged", self.rank, step, files)
            newest = max(steps, default=None)
            if newest is not None and self.on_complete is not None:
                self.on_complete(newest)
            if self.keep_last and self.rank == 0 and done:
                pruned = self.store.prune(self.keep_last)
                if pruned:
                    log.info("pruned steps %s (keep_last=%s)", pruned, self.keep_last)
            return done

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.sync_once()
            except Exception:  # an S3 hiccup must not end the sync loop
                log.exception("checkpoint sync round failed; retrying next round")

    def start(self) -> CheckpointSync:
        """Start the background thread."""
        self._thread = threading.Thread(target=self._run, name="checkpoint-sync", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[int]:
        """Stop the thread and run a last sync; returns the steps that last sync uploaded."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return self.sync_once()
