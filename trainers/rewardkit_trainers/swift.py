"""``rewardkit_trainers.swift``, the path ms-swift plugin files import: the ORMs live in
:mod:`rewardkit_trainers.rewards.swift`, re-exported here unchanged.

A plugin file written by ``rewardkit export swift`` before the move (``from
rewardkit_trainers.swift import register_metrics_callback, register_orms``), passed to
``swift rlhf --external_plugins``, still registers one ORM per component through it.
"""

from rewardkit_trainers.rewards.swift import (
    IMPUTED_SHARE,
    METRICS_CALLBACK,
    PENDING_METRICS,
    SwiftComponent,
    SwiftRewards,
    drain_metrics,
    export_plugin,
    func_name,
    metrics_callback_class,
    orm_table,
    register_metrics_callback,
    register_orms,
    swift_samples,
    swift_weights,
)

__all__ = ["IMPUTED_SHARE", "METRICS_CALLBACK", "PENDING_METRICS", "SwiftComponent",
           "SwiftRewards", "drain_metrics", "export_plugin", "func_name",
           "metrics_callback_class", "orm_table", "register_metrics_callback",
           "register_orms", "swift_samples", "swift_weights"]
