"""What a run folder says: the end-of-run summary, the Table 3 report, the ablation table and
the statistics they share (paired Δ, sign test, pass^k). Reads records; runs nothing.
"""
