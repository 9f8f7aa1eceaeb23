"""Train any qe model from its Hydra config, test it, and write its export (the clone's ``qe train``).

    python train.py                                    # embedded default: word LSTM LM on the sample corpus
    python train.py tokenizer=sp data=lm_brown_wt2 trainer=gpu
    python train.py experiment=ratpred_s4
    python train.py -m model.hidden_size=256,512       # sweep (sweep_summary.md in the sweep directory)

Configs: this clone's conf/ ($QE_CONF_DIR wins). Errors and exit statuses as ``qe train`` (qe/app.py):
one line and status 2 (bad input / config) or 3 (an export that cannot be loaded); HYDRA_FULL_ERROR=1 or --debug
for the traceback.
"""
import sys
from pathlib import Path

from qe.app import train

if __name__ == "__main__":
    raise SystemExit(train(sys.argv[1:], prog="train.py", conf=str(Path(__file__).resolve().parent / "conf")))
