"""rewardkit-gym: reasoning-gym's procedural tasks for rewardkit (docs/plugins/gym.md)."""
