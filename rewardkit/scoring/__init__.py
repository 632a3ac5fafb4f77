"""The engines behind ``rewardkit score``: a JSONL file of samples in, each line written
back with its scores.

* :mod:`rewardkit.scoring.jsonl`: the local engine, streaming the file batch by batch;
* :mod:`rewardkit.scoring.ray`: the Ray Data engine (``--engine ray``), sharded and
  resumable, for JSONL or parquet (its shards in :mod:`~rewardkit.scoring.shards`, its
  resume manifest in :mod:`~rewardkit.scoring.manifest`);
* what both share: how a line is read, checked and written back
  (:mod:`~rewardkit.scoring.rows`), the rules and the lock on ``--out``
  (:mod:`~rewardkit.scoring.output`) and the summary accumulated in constant memory
  (:mod:`~rewardkit.scoring.metrics`).

Nothing is imported here: the Ray engine's modules import Ray's helpers only when used.
"""
