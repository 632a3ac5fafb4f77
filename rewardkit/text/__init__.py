"""The scored text read and measured: what a reward grades (:mod:`rewardkit.text.graded`:
what follows the reasoning), the prompt as text (:mod:`rewardkit.text.prompt`: content
parts read as text, the turns a reward names), what counts as content
(:mod:`rewardkit.text.visible`: the characters a reader can see) and how long it is
(:mod:`rewardkit.text.lengths`: in characters, words or the policy's tokens).

``rewardkit.graded_text``, ``rewardkit.after_reasoning``, ``rewardkit.prompt_text``,
``rewardkit.visible_text`` and ``rewardkit.visible_length`` are the public names.
"""
