"""The prompt as text: what a reward compares an answer with (a copied prompt, a number
or an option taken from it) or shows a judge.

A prompt is a string or chat messages, and a message's content a string or content parts
(``[{"type": "text", "text": ...}, {"type": "image"}]``); the text is the same whichever
shape carries it, so a guard that refuses a copied prompt refuses it in every shape.

>>> prompt_text([{"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]}])
'What is 2+2?'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rewardkit.types import completion_text

#: which turns of a chat prompt are read
Turns = Literal["all", "user", "last_user"]


def prompt_text(prompt: Any, *, turns: Turns = "all", roles: bool = False) -> str:
    """The text of a prompt: a string as it is; chat messages one per line, each
    message's content parts read as their text.

    ``turns``: ``"all"`` (default) every message, system and earlier turns included (a
    number copied from a few-shot example is copied all the same); ``"user"`` the user
    messages; ``"last_user"`` the last user message (the request an answer responds to).
    A chat prompt without a user message is read whole. ``roles``: each line starts with
    its message's role (``user: ...``), as a judge is shown the conversation.

    >>> chat = [{"role": "system", "content": "Be brief."},
    ...         {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
    ...         {"role": "user", "content": "What is 2+2?"}]
    >>> prompt_text(chat, turns="last_user")
    'What is 2+2?'
    >>> print(prompt_text(chat, turns="user", roles=True))
    user: Hi
    user: What is 2+2?
    """
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, list | tuple):
        return completion_text(prompt)
    messages = [m for m in prompt if isinstance(m, Mapping)]
    if turns != "all":
        users = [m for m in messages if m.get("role") == "user"]
        if users:
            messages = users[-1:] if turns == "last_user" else users
    if roles:
        return "\n".join(f"{m.get('role', '')}: {completion_text(m)}" for m in messages)
    return "\n".join(completion_text(m) for m in messages)
