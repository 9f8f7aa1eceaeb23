"""``python -m experiments.zoo ...`` in a clone: the same program as ``qe zoo ...`` (:mod:`qe.zoo.build`)."""
from qe.zoo.build import main

if __name__ == "__main__":
    raise SystemExit(main())
