"""The environment of examples/agent-workspace.yaml: a folder of files and two tools.

``NotesEnv`` is a TRL environment (``GRPOTrainer(environment_factory=NotesEnv)``): TRL
makes one instance per rollout, calls ``reset(**row)`` before it (the row's ``files``
are written into the instance's private folder) and offers ``read_file`` and
``write_file`` as the policy's tools. The reward reads the folder the rollout left
(``workspace_criteria``; rewardkit hands it ``self.workspace``), not what the completion
says it did.
"""

from __future__ import annotations

from rewardkit_trainers.environments import WorkspaceEnvironment

#: the most a tool reads or writes, in characters
LIMIT = 10_000


class NotesEnv(WorkspaceEnvironment):
    """A folder of text files the policy reads and writes."""

    def read_file(self, path: str) -> str:
        """Read a text file of the workspace.

        Args:
            path: the file's path, relative to the workspace
        """
        target = self._path(path)
        if not target.is_file():
            raise ValueError(f"no file {path}")
        return target.read_text(encoding="utf-8")[:LIMIT]

    def write_file(self, path: str, content: str) -> str:
        """Write a text file into the workspace, replacing it if it exists.

        Args:
            path: the file's path, relative to the workspace
            content: the text to write
        """
        if len(content) > LIMIT:
            raise ValueError(f"content over {LIMIT} characters")
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {path}"
