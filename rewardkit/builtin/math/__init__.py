"""Built-in math: the ``exact_answer`` and ``math_answer`` rewards and how they read an answer.

The rewards are in :mod:`.reward` (registered as a default plugin under this package's
name). The other modules are the package's internal interface, each named for what it
decides; ``choice`` and ``qa`` read answers through the first three as well:

=====================  ==================================================================
``extraction``         where the final answer is (answer tag, ``\\boxed{}``, closing
                       phrase, last number, ``####``) and :data:`~.extraction.STATEMENTS`
``commitment``         whether the output stands by it: negated, questioned, retracted,
                       hedged or competing final statements
``hedges``             written forms that put several values into one answer
``numbers``            plain numbers read exactly (``$1,234.50``, ``50%``, ``3/4``)
``params``             :class:`~.params.MathParams` and the extraction strategies
``sample``             what math_answer reads from a sample, and a verdict's Score
``references``         what a gold answer is: a plain number, words or mathematics
``symbolic``           the bridge to math-verify and sympy (parsing, where they misread)
``cost_guards``        answers sympy must not see (unbounded powers, huge binomials)
``deadline``           one time bound on the symbolic steps, in any thread
``exact_numbers``      exact arithmetic in Q(sqrt) with indeterminates, read from LaTeX
``exact_equations``    whether two polynomial equations have the same solutions
``exact_structures``   exact values of tuples, intervals, sets, matrices, equations
``fast_path``          math_answer's exact verdict before math-verify, cached per pair
=====================  ==================================================================

Names without a leading underscore are what a module offers the others; the rest stays
inside its module. Nothing here is public API outside rewardkit: a plugin reads answers
through :mod:`rewardkit.text` and scores through :func:`rewardkit.get_reward`.
"""

from rewardkit.builtin.math.params import MathParams
from rewardkit.builtin.math.reward import ExactParams, exact_answer, math_answer, register_rewards

__all__ = ["ExactParams", "MathParams", "exact_answer", "math_answer", "register_rewards"]
