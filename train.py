"""Train any qe model from its Hydra config, test it, and write its export.

    python train.py                                    # embedded default: word LSTM LM on the sample corpus
    python train.py tokenizer=sp data=lm_brown_wt2 trainer=gpu
    python train.py experiment=ratpred_s4
    python train.py -m model.hidden_size=256,512       # sweep
"""
import hydra
from omegaconf import DictConfig

from qe.training import main_entry


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    return main_entry(cfg)


if __name__ == "__main__":
    main()
