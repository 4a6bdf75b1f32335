"""`samsa demo` end to end, as a user runs it with its output piped: Spark's logs and progress bars go to
spark.log, the table is not cut, the final status counts the run, and the chart is written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from samsa.spark.pipeline.run import stderr_to

SPARK_NOISE = ("WARN ", "[Stage ", "log4j", "WARNING: Using incubator modules", "setLogLevel")


@pytest.mark.slow
@pytest.mark.timeout(900)  # Spark's start and first micro-batch on 2 busy cores
def test_the_demo_runs_to_a_chart_with_spark_kept_out_of_view(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "samsa.cli", "demo", "--data-dir", str(data), "--duration", "8"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert not [noise for noise in SPARK_NOISE if noise in out], out
    assert (data / "spark.log").stat().st_size > 0
    final = next(line for line in out.splitlines() if line.startswith("done after "))
    assert " 0 rows/s" not in final
    produced = re.search(r"produced ([\d,]+) lines", final)
    read = re.search(r"Spark read ([\d,]+) lines", final)
    assert produced and read and produced[1] == read[1], final  # it waited for Spark to read every line
    shown = re.search(r"windows (\d+)", final)
    written = re.search(r"parquet: .*?\((\d+)\s+windows\)", out, re.S)  # the console may wrap a long path
    assert shown and written and shown[1] == written[1] and int(written[1]) >= 1, out
    assert "11:06*" in out  # the first window is partial: the generated traffic starts 40 s into it
    assert (data / "windows.png").read_bytes().startswith(b"\x89PNG")


def test_processes_started_meanwhile_write_their_stderr_to_the_file(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "spark.log"
    say = "import sys; sys.stderr.write(sys.argv[1])"
    with stderr_to(log):
        subprocess.run([sys.executable, "-c", say, "from the child\n"], check=True)
    subprocess.run([sys.executable, "-c", say, "after\n"], check=True)
    assert log.read_text() == "from the child\n"
    err = capfd.readouterr().err
    assert "after" in err and "from the child" not in err


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("running", [False, True], ids=["while Spark starts", "once it runs"])
def test_ctrl_c_stops_the_demo_and_everything_it_started(tmp_path: Path, running: bool) -> None:
    """Ctrl-C (SIGINT to the terminal's process group) a few seconds in was ignored, or printed tracebacks, or
    left Spark's JVM and workers running with nothing to stop them."""
    import os
    import signal
    import time
    import uuid

    mark = f"SAMSA_TEST_MARK={uuid.uuid4()}"
    demo = subprocess.Popen(
        [sys.executable, "-m", "samsa.cli", "demo", "--data-dir", str(tmp_path / "demo")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, mark.split("=")[0]: mark.split("=")[1]},
        start_new_session=True,
    )

    def marked() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
        return found

    try:
        if running:  # the queries have started once their checkpoints exist
            deadline = time.monotonic() + 180
            while not (tmp_path / "demo" / "checkpoint").exists() and time.monotonic() < deadline:
                time.sleep(0.2)
        time.sleep(3)
        os.killpg(demo.pid, signal.SIGINT)
        out, _ = demo.communicate(timeout=120)
        assert "Traceback" not in out, out
        # while Spark starts the run is aborted; once it runs it stops as at the end of --duration, with its report
        assert ("parquet:" in out) if running else ("Aborted!" in out), out
        deadline = time.monotonic() + 20
        while marked() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert marked() == [], out
    finally:
        for pid in marked():
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_demo_writes_its_dead_letters_exactly_once(tmp_path: Path) -> None:
    """``samsa demo --exactly-once``: the dead-letter stream goes through the samsa sink's transactions, so its log
    holds COMMIT markers, every dead letter is in a committed transaction, and the sink's decision topic exists."""
    from samsa.records.batch_view import iter_batches
    from samsa.records.control import ControlRecordType, batch_control_type
    from samsa.spark.pipeline.job import DEAD_LETTER_TOPIC

    data = tmp_path / "demo"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "samsa.cli",
            "demo",
            "--data-dir",
            str(data),
            "--duration",
            "8",
            "--exactly-once",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    batches = [
        b
        for path in sorted((data / "broker" / f"{DEAD_LETTER_TOPIC}-0").glob("*.log"))
        for b in iter_batches(path.read_bytes())
    ]
    data_batches = [b for b in batches if not b.is_control]
    markers = [batch_control_type(b) for b in batches if b.is_control]
    assert data_batches and all(b.is_transactional for b in data_batches)
    assert markers and set(markers) == {ControlRecordType.COMMIT}
    assert list((data / "broker").glob("*.samsa-sink-state-0"))
