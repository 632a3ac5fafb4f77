"""The scored text measured: what counts as content (:mod:`rewardkit.text.visible`: the
characters a reader can see) and how long it is (:mod:`rewardkit.text.lengths`: in
characters, words or the policy's tokens).

``rewardkit.visible_text`` and ``rewardkit.visible_length`` are the public names.
"""
