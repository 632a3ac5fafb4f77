"""A compile timeout is a wrong answer, paid once per program (issue 37.7).

A C++ compile bomb (16 constexpr evaluations, each under GCC's operation limit, so the
compiler does not give up early) outlasts its compile limit. Before the fix the timed-out
build was not cached: each case and each identical completion of the group compiled it
again, one after the other, until the reward's own timeout ended the rest as ``timeout``
(masked, no gradient) instead of a 0.
"""

from __future__ import annotations

import secrets

import pytest
from rewardkit_sandbox import LANGUAGES
from rewardkit_sandbox.languages import find_toolchain, shared_compile_cache

from rewardkit import ConfigError, RewardSet, Sample

pytestmark = pytest.mark.skipif(
    find_toolchain(LANGUAGES["cpp"])[1] is not None, reason="no C++ compiler on the sandbox PATH"
)

#: about 2 s of constant evaluation each on this machine (1M iterations, under GCC's
#: default -fconstexpr-ops-limit of 2^25), 16 of them: far past a 3 s compile limit
BOMB = """
constexpr unsigned long long spin(unsigned k) {
    unsigned long long s = k;
    for (unsigned i = 0; i < 5000; ++i)
        for (unsigned j = 0; j < 200; ++j)
            s = s * 6364136223846793005ULL + j;
    return s;
}
template <unsigned K> struct Spin { static constexpr unsigned long long value = spin(K); };
int main() {
    return (Spin<0>::value + Spin<1>::value + Spin<2>::value + Spin<3>::value
        + Spin<4>::value + Spin<5>::value + Spin<6>::value + Spin<7>::value
        + Spin<8>::value + Spin<9>::value + Spin<10>::value + Spin<11>::value
        + Spin<12>::value + Spin<13>::value + Spin<14>::value + Spin<15>::value) == 42;
}
"""

GROUP = 8
CASES = [{"stdin": "1\n", "stdout": "1"}, {"stdin": "2\n", "stdout": "2"}]


def test_a_compile_bomb_scores_zero_for_every_completion_of_its_group() -> None:
    # 8 completions x 2 cases x a 3 s compile limit is 48 s of compiling when each run
    # compiles again: past the component's 30 s timeout. Compiled once, it is about 3 s.
    program = f"// {secrets.token_hex(8)}\n{BOMB}"  # a source no other test compiled
    completion = f"```cpp\n{program}```"
    config = {"rewards": {"code": {
        "reward": "code_execution",
        "timeout": 30,
        "params": {"language": "cpp", "compile_timeout_s": 3, "concurrency": 2},
    }}}
    samples = [Sample(completion=completion, reference=CASES) for _ in range(GROUP)]
    misses = shared_compile_cache().misses
    result = RewardSet.from_dict(config).score(samples)
    scores = result.scores("code")
    assert [score.status.value for score in scores] == ["ok"] * GROUP, [
        score.reason for score in scores
    ]
    assert result.values("code") == [0.0] * GROUP
    assert all("compile_timeout" in (score.reason or "") for score in scores)
    assert shared_compile_cache().misses - misses == 1  # one compile for the 16 runs


@pytest.mark.parametrize("params", [
    {"language": "cpp", "compile_timeout_s": 0},
    {"language": "cpp", "compile_timeout_s": 601},
    {"language": "python", "compile_timeout_s": 10},  # nothing to compile
    {"language": "cpp", "compile_timeout_s": 10, "runner": "piston",
     "endpoint": "http://127.0.0.1:9/api/v2"},  # piston: runner_options.compile_timeout_s
])
def test_compile_timeout_s_is_checked(params: dict[str, object]) -> None:
    config = {"rewards": {"code": {"reward": "code_execution", "params": params}}}
    with pytest.raises(ConfigError, match="compile_timeout_s"):
        RewardSet.from_dict(config)
