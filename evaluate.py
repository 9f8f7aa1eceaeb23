"""Validate metrics against human judgments: score a rated dataset, meta-evaluate, write report.md.

    python evaluate.py                                    # embedded sample, length baseline
    python evaluate.py dataset=emnlp17                    # EMNLP17 + the metric columns shipped with it
    python evaluate.py dataset=emnlp17 'models=[exports/wp_lm]'
    qe evaluate dataset=emnlp17 stats.tails=1             # the same for scripts

Config: conf/evaluate.yaml (groups dataset/, scorer/). Library: qe.evaluation.
"""
import hydra
from omegaconf import DictConfig

from qe.evaluation.runner import run_evaluation


@hydra.main(version_base="1.3", config_path="conf", config_name="evaluate")
def main(cfg: DictConfig) -> None:
    run_evaluation(cfg, entry="python evaluate.py")


if __name__ == "__main__":
    main()
