"""Global options (--store, --config) before the command or after it (issue 32)."""

from __future__ import annotations

import pytest

from proxypointer.cli import main


@pytest.mark.parametrize(
    "argv",
    [
        ["--store", "{s}", "status"],
        ["status", "--store", "{s}"],
        ["--store", "{other}", "status", "--store", "{s}"],  # the later one wins
        ["--config", "{cfg}", "--store", "{s}", "status"],
    ],
)
def test_store_and_config_work_on_either_side_of_the_command(tmp_path, capsys, argv):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("retrieval:\n  k: 3\n", encoding="utf-8")
    store, other = tmp_path / "nostore", tmp_path / "elsewhere"
    args = [a.format(s=store, other=other, cfg=cfg) for a in argv]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"{store}: no proxypointer store here" in err and str(other) not in err


def test_an_option_before_a_command_that_has_no_use_for_it_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--store", "s", "tree", "README.md"])
    assert exc.value.code == 2 and "--store does not apply to `tree`" in capsys.readouterr().err


def test_a_bad_config_before_the_command_is_read(tmp_path, capsys):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("retrieval:\n  k: zero\n", encoding="utf-8")
    assert main(["--config", str(cfg), "tree", "README.md"]) == 1
    assert "bad.yaml" in capsys.readouterr().err
