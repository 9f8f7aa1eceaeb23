"""experiments.seed_spread: per-seed correlations, their mean and sd, and Williams tests against a reference metric."""
import json

import numpy as np
import pytest

from experiments import seed_spread


def _folder(path, scores, human, ref=None):
    path.mkdir()
    with open(path / "scores.jsonl", "w") as fh:
        for i, (s, h) in enumerate(zip(scores, human)):
            row = {"id": f"r{i}", "system": "A" if i % 2 else "B", "ratings": {"quality": float(h)},
                   "scores": {"m": float(s), **({"ref": float(ref[i])} if ref is not None else {})}}
            fh.write(json.dumps(row) + "\n")
    (path / "correlations.csv").write_text(
        "level,protocol,subset,units,rating,metric,method,r\n"
        "system,system means,all,systems,quality,m,spearman,1.0\n"
        "system,system means,all,systems,quality,m,pearson,0.5\n")
    return path


def test_means_spread_and_williams(tmp_path):
    rng = np.random.default_rng(0)
    human = rng.normal(size=200)
    good = human + rng.normal(scale=0.5, size=200)
    noisy = human + rng.normal(scale=2.0, size=200)
    ref = human + rng.normal(scale=1.0, size=200)
    a = _folder(tmp_path / "a", good, human, ref=ref)
    b = _folder(tmp_path / "b", noisy, human)
    res = seed_spread.spread([a, b], ["m"], ["ref"], ["quality"])
    row = res["rows"][0]
    assert row["metric"] == "m" and len(row["spearman"]) == 2
    assert row["pearson"][0] == pytest.approx(np.corrcoef(human, good)[0, 1])
    assert row["system_pearson"] == [0.5, 0.5]
    w = {x["folder"]: x for x in res["williams"]}
    assert w[str(a)]["p_metric_better_r"] < 0.01 < w[str(b)]["p_metric_better_r"]  # good beats ref, noisy does not
    assert w[str(b)]["p_against_better_r"] < 0.01
    text = seed_spread.table(res)
    assert "| quality | m |" in text and "| quality | ref |" in text and "±" in text


def test_a_missing_score_is_left_out_not_nan(tmp_path):
    human = np.arange(20, dtype=float)
    scores = human.copy()
    scores[3] = np.nan
    a = tmp_path / "a"
    a.mkdir()
    with open(a / "scores.jsonl", "w") as fh:
        for i, (s, h) in enumerate(zip(scores, human)):
            fh.write(json.dumps({"id": f"r{i}", "ratings": {"quality": h},
                                 "scores": {"m": None if np.isnan(s) else s}}) + "\n")
    row = seed_spread.spread([a], ["m"], [], ["quality"])["rows"][0]
    assert row["spearman"] == [pytest.approx(1.0)] and row["pearson"] == [pytest.approx(1.0)]


def test_folders_must_hold_the_same_records(tmp_path):
    a = _folder(tmp_path / "a", [1, 2, 3, 4], [1, 2, 3, 5])
    b = _folder(tmp_path / "b", [1, 2, 3], [1, 2, 3])
    with pytest.raises(SystemExit, match="other record ids"):
        seed_spread.spread([a, b], ["m"], [], ["quality"])
    with pytest.raises(SystemExit, match="--against nope: scored in none"):
        seed_spread.spread([a], ["m"], ["nope"], ["quality"])


def test_paired_metrics_are_tested_within_each_folder(tmp_path):
    """--paired: each folder's metric against that folder's own member score, not against one folder's."""
    rng = np.random.default_rng(1)
    human = rng.normal(size=300)
    folders = []
    for name, member_noise in (("a", 0.3), ("b", 3.0)):  # the member is better than m in a, worse in b
        member = human + rng.normal(scale=member_noise, size=300)
        m = human + rng.normal(scale=1.0, size=300)
        f = _folder(tmp_path / name, m, human, ref=member)
        folders.append(f)
    res = seed_spread.spread(folders, ["m"], [], ["quality"], paired=["ref", "m"])  # m against itself: skipped
    w = {x["folder"]: x for x in res["williams"]}
    assert len(res["williams"]) == 2 and {x["against"] for x in res["williams"]} == {"ref"}
    assert w[str(folders[0])]["p_against_better_r"] < 0.01 and w[str(folders[1])]["p_metric_better_r"] < 0.01
    assert w[str(folders[1])]["p_metric_better_rank"] < 0.01
    assert "| quality | m | ref |" in seed_spread.table(res)


def test_describe_gives_the_spread_of_each_metric(tmp_path, capsys):
    a = _folder(tmp_path / "a", [0.0, 1.0, 1.0, 1.0], [1, 2, 3, 4], ref=[0.1, 0.2, 0.3, 0.4])
    assert seed_spread.main([str(a), "--metrics", "m", "ref", "--describe"]) == 0
    out = capsys.readouterr().out
    assert f"| m | 2 | {np.std([0, 1, 1, 1]):.3f} |" in out and out.rstrip().endswith("| 0.250 |")
    assert "| 0.750 |" in out  # three of four m scores at its max


def test_plot_draws_one_panel_per_rating_with_goals(tmp_path, capsys):
    rng = np.random.default_rng(1)
    human = rng.normal(size=60)
    a = _folder(tmp_path / "a", human + rng.normal(size=60), human, ref=human + rng.normal(size=60))
    b = _folder(tmp_path / "b", human + rng.normal(size=60), human)
    out = tmp_path / "fig" / "spread.png"
    assert seed_spread.main([str(a), str(b), "--metrics", "m", "--against", "ref", "--ratings", "quality",
                             "--plot", str(out), "--goal", "quality=0.5"]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"plot: {out}" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        seed_spread.main([str(a), "--metrics", "m", "--plot", str(out), "--goal", "quality=high"])
