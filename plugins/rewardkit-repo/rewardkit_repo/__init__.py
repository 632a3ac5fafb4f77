"""rewardkit-repo: rewards that verify a repository after the model's patch."""

from rewardkit_repo.repo_tests import RepoTests

__all__ = ["RepoTests"]
