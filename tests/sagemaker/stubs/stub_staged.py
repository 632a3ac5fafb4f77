"""A stand-in for one EasyR1 or verl driver on one node, for staged runs: it reads its
arguments the way those trainers do (``key=value`` overrides, the later one winning),
loads the EasyR1 reward file as EasyR1 does (``spec_from_file_location``) or reads the
verl reward kwargs, and saves one step folder per step with the backend's tracker.

Arguments: EasyR1 ``trainer.save_checkpoint_path=D [trainer.load_checkpoint_path=D/
global_step_N] [trainer.max_steps=M] worker.reward.reward_function=F:compute_score``;
verl ``trainer.default_local_dir=D [trainer.resume_from_path=D/global_step_N]
[trainer.total_training_steps=M] ++reward.custom_reward_function.reward_kwargs.step=S``.
Environment: STUB_LOG (events), STUB_ARGV_LOG (one JSON argv per run), STUB_STEPS (the
command's own end, default 6), STUB_HANG_AT (hang inside that save, before the tracker),
STUB_DATA_END (the data runs out after that step, whatever the step limit).
"""

import importlib.util
import json
import os
import sys
import time
from pathlib import Path


def event(text: str) -> None:
    with open(os.environ["STUB_LOG"], "a", encoding="utf-8") as f:
        f.write(text + "\n")


def main() -> int:
    with open(os.environ["STUB_ARGV_LOG"], "a", encoding="utf-8") as f:
        f.write(json.dumps(sys.argv) + "\n")
    args: dict[str, str] = {}
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        args[key.lstrip("+")] = value
    easyr1 = "trainer.save_checkpoint_path" in args
    if easyr1:
        root = Path(args["trainer.save_checkpoint_path"])
        resume = args.get("trainer.load_checkpoint_path")
        total = args.get("trainer.max_steps")
        path = args["worker.reward.reward_function"].rsplit(":", 1)[0]
        spec = importlib.util.spec_from_file_location("reward", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        reward_step = module.STEP
    else:
        root = Path(args["trainer.default_local_dir"])
        resume = args.get("trainer.resume_from_path")
        total = args.get("trainer.total_training_steps")
        reward_step = int(args.get("reward.custom_reward_function.reward_kwargs.step", 0))
    start = int(resume.rsplit("global_step_", 1)[1]) if resume else 0
    if resume and not Path(resume).is_dir():
        print(f"no checkpoint at {resume}", file=sys.stderr)
        return 3
    end = int(total) if total else int(os.environ.get("STUB_STEPS", "6"))
    end = min(end, int(os.environ.get("STUB_DATA_END", end)))
    event(f"start {start} reward_step {reward_step} until {end}")
    for step in range(start + 1, end + 1):
        time.sleep(0.05)
        folder = root / f"global_step_{step}" / "actor"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model_world_size_1_rank_0.pt").write_text(f"s{step}")
        if os.environ.get("STUB_HANG_AT") == str(step):
            event(f"hanging {step}")
            time.sleep(3600)
        if easyr1:
            (root / "checkpoint_tracker.json").write_text(json.dumps({"last_global_step": step}))
        else:
            (root / "latest_checkpointed_iteration.txt").write_text(str(step))
        event(f"saved {step}")
    event("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
