"""Run inside .venv-verl: compose verl's own `ppo_trainer` Hydra config with the overrides
`rewardkit export verl -o FILE` wrote (its `export` lines left out), then load what the
config names as verl's AgentLoopWorker does: the agent loop registry
(`agent.agent_loop_config_path`), the agent loop it selects, and the tools. Prints one
JSON object.

    python verl_export_check.py OVERRIDES_FILE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import hydra
import verl
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
from verl.tools.tool_registry import load_all_tools
from verl.utils.import_utils import resolve_config_path

lines = Path(sys.argv[1]).read_text(encoding="utf-8").splitlines()
overrides = [ln for ln in lines if ln and not ln.startswith("export ")]
config_dir = Path(verl.__file__).parent / "trainer" / "config"
with initialize_config_dir(str(config_dir), version_base=None):
    cfg = compose("ppo_trainer", overrides=overrides)  # unknown keys raise here

rollout = cfg.actor_rollout_ref.rollout
registry: dict[str, dict] = {}
if rollout.agent.agent_loop_config_path:  # as AgentLoopWorker.__init__ reads it
    for entry in OmegaConf.load(resolve_config_path(rollout.agent.agent_loop_config_path)):
        registry[entry.name] = OmegaConf.to_container(entry)
selected = registry.get(rollout.agent.default_agent_loop)
loop_class = hydra.utils.get_class(selected["_target_"]) if selected else None
tool_path = rollout.multi_turn.function_tool_path
tools = load_all_tools(tool_config_path=None,
                       function_tool_path=resolve_config_path(tool_path)) if tool_path else []
print("RESULT " + json.dumps({
    "multi_turn_enable": rollout.multi_turn.enable,
    "default_agent_loop": rollout.agent.default_agent_loop,
    "registered": sorted(registry),
    "loop_target": selected["_target_"] if selected else None,
    "is_tool_agent_loop": bool(loop_class and issubclass(loop_class, ToolAgentLoop)),
    "max_assistant_turns": rollout.multi_turn.max_assistant_turns,
    "tools": sorted(t.name for t in tools),
    "reward_manager": cfg.reward.reward_manager.name,
}, default=str))
