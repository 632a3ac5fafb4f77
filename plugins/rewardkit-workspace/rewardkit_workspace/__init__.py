"""rewardkit-workspace: rewards that check the workspace an agent left
(docs/plugins/workspace.md)."""
