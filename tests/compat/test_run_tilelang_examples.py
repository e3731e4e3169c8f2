"""tools/run_tilelang_examples.py on a made-up examples folder: rows per test function, first error
lines, per-file time limits, the global --deadline ("not run") and parallel files."""

import json
import os
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import run_tilelang_examples as runner  # noqa: E402


def _examples(tmp_path):
    files = {
        "a/test_a.py": """
            def test_passes():
                assert 1 + 1 == 2

            def test_fails():
                raise ValueError("the first line of the error\\nand a second one")
            """,
        "b/test_b.py": """
            import time

            def test_slow():
                time.sleep(60)
            """,
        "c/test_c.py": """
            def test_never_reached():
                pass
            """,
        "amd/test_amd.py": "def test_out_of_scope():\n    pass\n",
    }
    root = tmp_path / "examples"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_rows_first_error_lines_deadline_and_not_run(tmp_path, capsys):
    examples = _examples(tmp_path)
    out = tmp_path / "rows.json"
    code = runner.main(["--examples", str(examples), "--cuda-on-cpu", "--timeout", "120", "--deadline", "15",
                        "--json", str(out), "--table", str(tmp_path / "table.md"), "--keep", str(tmp_path / "work")])
    assert code == 0
    rows = {r["test"].split("::")[-1]: r for r in json.loads(out.read_text())}
    assert set(rows) == {"test_passes", "test_fails", "test_slow", "test_never_reached"}  # amd/ is out of scope
    assert rows["test_passes"]["outcome"] == "pass"
    assert rows["test_fails"]["outcome"] == "fail"
    assert rows["test_fails"]["error"] == "ValueError: the first line of the error"
    assert rows["test_slow"]["outcome"] == "timeout"  # ended at the deadline
    assert rows["test_never_reached"]["outcome"] == "not run"
    table = capsys.readouterr().out
    assert (tmp_path / "table.md").read_text().splitlines()[0] == "| test | outcome | s | first error line |"
    assert "| a/test_a.py::test_fails | fail |" in table and "4 rows: 1 fail, 1 not run, 1 pass, 1 timeout" in table


def test_files_run_in_parallel_with_their_own_time_limit(tmp_path):
    examples = _examples(tmp_path)
    out = tmp_path / "rows.json"
    runner.main(["--examples", str(examples), "a", "b", "--cuda-on-cpu", "--jobs", "2", "--timeout", "10",
                 "--json", str(out), "--keep", str(tmp_path / "work")])
    rows = {r["test"].split("::")[-1]: r for r in json.loads(out.read_text())}
    assert set(rows) == {"test_passes", "test_fails", "test_slow"}
    assert rows["test_slow"]["outcome"] == "timeout" and "time limit of 10 s" in rows["test_slow"]["error"]
