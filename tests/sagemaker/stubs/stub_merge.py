"""A stand-in for EasyR1's scripts/model_merger.py: joins the FSDP shards of
--local_dir into local_dir/huggingface/model.safetensors."""

import argparse
import re
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--local_dir", required=True)
local = Path(parser.parse_args().local_dir)
shards = sorted(
    local.glob("model_world_size_*_rank_*.pt"),
    key=lambda p: int(re.search(r"rank_(\d+)", p.name).group(1)),
)
assert shards, f"no shards in {local}"
out = local / "huggingface"
out.mkdir(exist_ok=True)
(out / "model.safetensors").write_text("+".join(p.read_text() for p in shards))
(out / "config.json").write_text("{}")
