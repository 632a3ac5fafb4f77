"""Importers: reward definitions of other frameworks as rewardkit configs."""
