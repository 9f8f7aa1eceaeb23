"""A hash of the pairs the E2E content aligner's zoo recipe trains and validates on (docs/results/zoo.md).

The pairs are labelled with the matcher's help, so a matcher change can change them. They are made as
``qe.content.task.build_content_aligner`` makes them for ``task=content_aligner data.held_out=[]`` (the
``content-aligner-e2e`` recipe, seed 42). If two commits give the same hash, their builds train on the same data.

    python -m experiments.aligner_pairs_hash --data-dir ../shared/data      # about 30 s on the 2-core CPU box
    git worktree add /tmp/old COMMIT && PYTHONPATH=/tmp/old python -m experiments.aligner_pairs_hash --data-dir ...
"""
from __future__ import annotations

import argparse
import hashlib
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args(argv)
    import numpy as np
    from hydra import compose, initialize_config_dir

    import qe
    from qe.content import Matcher, mine
    from qe.content.aligner_data import Inventory, make_examples
    from qe.content.task import read_rows, split_rows

    with initialize_config_dir(str(Path(qe.__file__).parent / "conf"), version_base=None):
        cfg = compose("train", overrides=["task=content_aligner", "data.held_out=[]"])
    d = cfg.data
    rows = read_rows(str(d.source), a.data_dir)
    train, val = split_rows(rows, int(d.folds), int(d.fold_seed), [], float(d.val_fraction))
    lexicon = mine([(r["mr"], r["ref"]) for r in train], source="aligner-train", min_count=int(d.min_count))
    matcher, inventory = Matcher(lexicon), Inventory.from_rows(train)
    kw = dict(synthetic=bool(d.synthetic), real_errors=bool(d.real_errors), slot_queries=bool(d.slot_queries),
              p_entity=float(d.p_entity))
    h = hashlib.sha256()
    sizes = []
    for part, seed in ((train, a.seed), (val, a.seed + 1)):
        examples = make_examples(part, matcher, inventory, np.random.default_rng(seed), **kw)
        sizes.append(len(examples))
        for e in examples:
            h.update(repr(e).encode())
    print(f"qe from {qe.__file__}: {sizes[0]} training and {sizes[1]} validation pairs; sha256 {h.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
