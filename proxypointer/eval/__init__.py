"""Evaluation: benchmarks, metrics, the harness that runs systems, tree accuracy.

Modules:
    benchmark  benchmark loaders and metrics (hit@k, MRR@10, recall@5, budget hits)
    harness    systems, cached ingestion, runs over scopes, reports
    trees      a skeleton tree scored against a gold outline (recall, nesting)
"""

__all__: list[str] = []
