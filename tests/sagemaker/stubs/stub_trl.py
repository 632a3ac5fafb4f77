"""A stand-in for a TRL run: writes checkpoint-N folders the way transformers' Trainer
does (weights and optimizer first, trainer_state.json last), then the final model.

Arguments: --output_dir D [--resume_from_checkpoint D/checkpoint-N] (appended by the
entrypoint). Environment: STUB_LOG (events, one per line), STUB_STEPS (default 4),
STUB_HANG_AT (stop forever inside that step's save, before trainer_state.json),
STUB_FAIL (print it to stderr and exit 1).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path


def event(text: str) -> None:
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as f:
        f.write(text + "\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--resume_from_checkpoint")
    parser.add_argument("--save_on_each_node")
    args = parser.parse_args()
    if os.environ.get("STUB_FAIL"):
        print("loading model...", flush=True)
        print(os.environ["STUB_FAIL"], file=sys.stderr, flush=True)
        return 1
    out = Path(args.output_dir)
    start = 0
    if args.resume_from_checkpoint:
        state = json.loads((Path(args.resume_from_checkpoint) / "trainer_state.json").read_text())
        start = state["global_step"]
        assert (Path(args.resume_from_checkpoint) / "model.safetensors").read_text() == f"w{start}"
    rank = os.environ.get("REWARDKIT_NODE_RANK", "0")
    event(f"start {start}" if rank == "0" else f"rank {rank} start {start}")
    for step in range(start + 1, int(os.environ.get("STUB_STEPS", "4")) + 1):
        time.sleep(0.05)
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.safetensors").write_text(f"w{step}")
        (folder / "optimizer.pt").write_text(f"o{step}")
        if os.environ.get("STUB_HANG_AT") == str(step):
            event(f"hanging {step}")
            time.sleep(3600)
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        if rank == "0":
            event(f"saved {step}")
    (out / "model.safetensors").write_text("final")
    (out / "config.json").write_text("{}")
    if rank == "0":
        event("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
