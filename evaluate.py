"""Validate metrics against human judgments: score a rated dataset, meta-evaluate, write report.md.

    python evaluate.py                                    # embedded sample, length baseline
    python evaluate.py dataset=emnlp17                    # EMNLP17 + the metric columns shipped with it
    python evaluate.py dataset=emnlp17 'models=[exports/wp_lm]'
    qe evaluate dataset=emnlp17 stats.tails=1             # the same for scripts

Config: this clone's conf/evaluate.yaml (groups dataset/, scorer/; $QE_CONF_DIR wins). Library: qe.evaluation.
Errors and exit statuses as ``qe evaluate`` (qe/app.py): one line and status 2 (bad input, e.g. a malformed record
named by file:line) or 3 (a model that cannot be loaded); HYDRA_FULL_ERROR=1 or --debug for the traceback.
"""
import sys
from pathlib import Path

from qe.app import evaluate

if __name__ == "__main__":
    raise SystemExit(evaluate(sys.argv[1:], prog="evaluate.py", entry="python evaluate.py",
                              conf=str(Path(__file__).resolve().parent / "conf")))
