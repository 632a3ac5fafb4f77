"""The node-wide execution budget, now in the core (:mod:`rewardkit.execution.budget`)
so that plugins other than the sandbox (the API judges) share it; this name stays for
the sandbox's runners and for code written before the move."""

from __future__ import annotations

from rewardkit.execution.budget import (
    BudgetWaitTimeout,
    ExecutionBudget,
    Ticket,
    node_budget,
    runtime_directory,
)

__all__ = ["BudgetWaitTimeout", "ExecutionBudget", "Ticket", "node_budget",
           "runtime_directory"]
