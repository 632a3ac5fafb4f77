"""Word-count rewards: an example third-party rewardkit plugin."""
