"""The statistics of a paired, task-clustered comparison (Miller 2024, "Adding Error Bars to
Evals", arXiv 2411.00640): the design's detectable Δ and what a target Δ costs (``design``), the
clustered interval and p-value of an observed Δ with Holm's correction (``intervals``), the
variance components of a run folder's scores (``components``), the published figures to plan
with (``published``) and the plain verdict a report prints beside a Δ (``verdict``).

Pure arithmetic on numbers and data frames: the lowest layer of the runtime, importing none of it.
"""
