"""What a run folder says: the end-of-run summary, the Table 3 report, the ablation table, the
statistics they share (paired Δ both ways, sign test, pass^k, errors per arm) and the export of
judged plans in APB's record shape (``apb_export``). Reads records; runs nothing.
"""
