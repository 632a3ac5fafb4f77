"""rewardkit-textmetrics: reference-based text metrics as rewards, computed by the libraries
the field reports them with (sacrebleu, rouge-score, rapidfuzz), scaled to [0, 1]."""
