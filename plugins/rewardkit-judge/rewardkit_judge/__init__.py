"""rewardkit-judge: rewards whose verdict comes from a model.

``reward_model``
    a transformers sequence-classification reward model scores prompt + completion
    (``pip install 'rewardkit-judge[model]'``).
``llm_judge``
    a rubric prompt sent to an OpenAI-compatible chat endpoint (a vLLM server in real
    use); the score is read from the answer (``pip install 'rewardkit-judge[http]'``).
``pairwise_judge``
    a group reward: the judge compares the completions of one prompt two at a time,
    round-robin; each is paid its share of wins.

``python -m rewardkit_judge.chat_server --model DIR`` serves a local transformers causal
LM through the OpenAI chat-completions API (a judge without vLLM, and the test server).
Heavy libraries are imported when a reward is built, never at plugin load.
"""

from rewardkit_judge.llm_judge import JudgeParams, LLMJudge
from rewardkit_judge.pairwise_judge import PairwiseJudge, PairwiseParams
from rewardkit_judge.reward_model import RewardModel, RewardModelParams

__all__ = ["JudgeParams", "LLMJudge", "PairwiseJudge", "PairwiseParams", "RewardModel",
           "RewardModelParams"]
