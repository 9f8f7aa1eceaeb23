"""A tiny rated set with MRs and references, and a composed ``experiment=ratpred_s2`` config over it, for the
RatPred and ensemble tests."""
from __future__ import annotations

from qe.data.record import Record


def _records(n=60):
    recs = []
    for i in range(n):
        mr = f"inform(name='place {i // 2}',food=thai)"  # two outputs per MR
        recs.append(Record(id=f"r{i}", output=f"place {i // 2} serves thai food number {i}", system="A" if i % 2 else "B",
                           dataset="SFRES" if i < 40 else "SFHOT", mr=mr, refs=[f"place {i // 2} has thai food"],
                           ratings={"quality": float(1 + i % 6)}, extra={"ref_sources": [f"src#{i // 2}"]}))
    return recs


def _compose_ratpred(tmp_path, *overrides):
    import pathlib

    from hydra import compose, initialize_config_dir
    from omegaconf import open_dict

    from qe.data.record import save_records

    data = tmp_path / "rated.jsonl"
    if not data.exists():
        save_records(_records(), data)
    conf = pathlib.Path(__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(str(conf), version_base="1.3"):
        cfg = compose("train", overrides=[
            "experiment=ratpred_s2", f"data.dataset={data}", "protocol.seeds=[1]", "protocol.passes_synth=1",
            "protocol.max_errors=1", "model.embedding_dim=8", "model.hidden_size=8", "model.batch_size=16",
            "trainer=cpu", "trainer.enable_progress_bar=false", "trainer.log_every_n_steps=1", *overrides])
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path / "run")
        cfg.export_dir = str(tmp_path / "export")
    return cfg
