"""The command line against a hostile user: output files, limits, backend files, bounded input,
names, memory. Each case is a subprocess run of the CLI; a failure must be exit status 2, one
line on stderr, no traceback, and leave every file the run named as it was."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import egraph_lower as el
from cli_support import EXAMPLE, PRECIOUS, ROOT, chain, cli, command, env, fails_and_keeps, refused
from egraph_lower.build import GraphBuilder

METAL = json.loads((ROOT / "egraph_lower" / "backends" / "metal.json").read_text())


# --- output files ---------------------------------------------------------------------------

def test_a_link_planted_at_the_old_temporary_name_is_not_followed(work: Path) -> None:
    (work / "victim.txt").write_bytes(b"VICTIM\n")
    script = (f"ln -s victim.txt .out.json.tmp$$; exec {' '.join(command())} lower g.json -b metal -o out.json -q")
    r = subprocess.run(["sh", "-c", script], cwd=work, capture_output=True, text=True, env=env())
    assert r.returncode == 0, r.stderr
    assert (work / "victim.txt").read_bytes() == b"VICTIM\n"
    assert el.load_graph(work / "out.json").name == "mlp_step"
    links = [p for p in work.iterdir() if p.is_symlink()]
    assert len(links) == 1 and os.readlink(links[0]) == "victim.txt"


def _block_device() -> str | None:
    for name in sorted(os.listdir("/dev")):
        if stat.S_ISBLK(os.lstat(f"/dev/{name}").st_mode):
            return f"/dev/{name}"
    return None


@pytest.mark.parametrize("kind", ["directory", "link", "link to a directory", "dangling link", "socket",
                                  "block device"])
def test_an_output_that_is_not_a_regular_file_is_refused(kind: str, work: Path) -> None:
    """What is neither a file to replace nor a stream to write to (tests/test_streams.py): a link
    to a regular file is refused, not written through (a link is never replaced)."""
    target = work / "target"
    if kind == "directory":
        target.mkdir()
    elif kind == "link":
        target.symlink_to("out.json")
    elif kind == "link to a directory":
        (work / "d").mkdir()
        target.symlink_to("d")
    elif kind == "dangling link":
        target.symlink_to("missing.json")
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
    path = "target"
    if kind == "block device":
        device = _block_device()
        if device is None:
            pytest.skip("no block device in /dev")
        path = device
    want = {"directory": "a directory", "socket": "a socket", "block device": "a block device"}.get(kind, "a symbolic link")
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", path], want)


@pytest.mark.parametrize("flag", ["-o", "--report"])
def test_an_output_in_a_missing_or_unwritable_directory_is_refused(flag: str, work: Path) -> None:
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", flag, "missing/x.json"],
                    "no such directory")
    if os.geteuid() == 0:  # root writes through permission bits: /proc refuses anyone a new file
        fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", flag, "/proc/x.json"], "/proc/x.json")
    else:
        (work / "ro").mkdir(mode=0o555)
        fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", flag, "ro/x.json"], "ro/x.json")


def test_a_report_that_cannot_be_written_leaves_the_graph_output_as_it_was(work: Path) -> None:
    (work / "rdir").mkdir()
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", "--report", "rdir"], "report", "directory")
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", "--report", "out.json"], "two outputs")
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", "--report", "rdir/"], "not the path of a file")
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "-", "--report", "-"], "stdout is already named")


def test_a_full_disk_leaves_the_output_as_it_was(work: Path) -> None:
    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))

    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", "-q"], "File too large", preexec=small_files)


@pytest.mark.parametrize("args", [["lower", "g.json", "-b", "metal", "-q"], ["lower", "g.json", "-b", "metal", "-o", "out.json"],
                                  ["explore", "g.json", "-b", "metal", "--json", "out.json"]])
def test_stdout_on_a_full_device(args: list[str], work: Path) -> None:
    with open("/dev/full", "w") as full:
        fails_and_keeps(work, args, "stdout", "No space left", stdout=full)


def test_explore_refuses_every_output_before_writing_any(work: Path) -> None:
    (work / "page.html").write_bytes(PRECIOUS)
    fails_and_keeps(work, ["explore", "g.json", "-b", "metal", "-q", "--html", "page.html", "--json", "missing/r.json"],
                    "JSON report", "no such directory")


def test_run_refuses_an_output_it_cannot_write(work: Path) -> None:
    np.savez(work / "in.npz", x=np.ones((4, 8), np.float32))
    fails_and_keeps(work, ["run", "g.json", "-i", "in.npz", "-o", "missing/o.npz"], "no such directory")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_a_killed_run_leaves_the_output_as_it_was(sig: int, work: Path) -> None:
    (work / "chain.json").write_text(chain(3000))
    p = subprocess.Popen(command("lower", "chain.json", "-b", "wgpu", "-o", "out.json", "-q"), cwd=work, env=env(),
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(q.name.startswith(".out.json.") for q in work.iterdir()):  # the output's file aside is open
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert (work / "out.json").read_bytes() == PRECIOUS
    left = sorted(q.name for q in work.iterdir())
    if sig == signal.SIGKILL:  # nothing runs after kill -9: the file aside stays (never renamed)
        assert len(left) == 4
    else:
        assert left == ["chain.json", "g.json", "out.json"]
        assert p.returncode == (130 if sig == signal.SIGINT else 128 + sig)


def test_concurrent_writers_leave_a_whole_file(work: Path) -> None:
    procs = [subprocess.Popen(command("lower", "g.json", "-b", b, "-o", "out.json", "-q"), cwd=work, env=env())
             for b in ("metal", "wgpu", "tpu")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    assert el.load_graph(work / "out.json").name == "mlp_step"
    assert sorted(q.name for q in work.iterdir()) == ["g.json", "out.json"]


# --- limits ----------------------------------------------------------------------------------

@pytest.mark.parametrize("flag, value", [("--timeout", "nan"), ("--timeout", "0"), ("--max-iterations", "-5"),
                                         ("--max-enodes", "0")])
def test_limits_out_of_range_are_refused(flag: str, value: str, work: Path) -> None:
    fails_and_keeps(work, ["lower", "g.json", "-b", "metal", "-o", "out.json", flag, value], flag)


@pytest.mark.parametrize("backend, args, expected", [
    ("metal", ["--max-iterations", "0"], "iteration_limit: node 7 (ActivationBackward{Gelu}) was not yet lowered"
                                         " after 0 iterations; raise --max-iterations"),
    ("wgpu", ["--max-iterations", "1"], "iteration_limit: node 5 (Activation{Gelu}) was not yet lowered after"
                                        " 1 iteration; raise --max-iterations"),
    ("wgpu", ["--max-enodes", "30"], "node_limit: node 5 (Activation{Gelu}) was not yet lowered after 1 iteration;"
                                     " raise --max-enodes"),
])
def test_a_limit_that_stops_saturation_early_is_named_and_reported(backend: str, args: list[str], expected: str,
                                                                    work: Path) -> None:
    (work / "report.json").write_bytes(PRECIOUS)
    r = cli("lower", "g.json", "-b", backend, "-o", "out.json", "--report", "report.json", *args, cwd=work)
    line = refused(r, expected)
    assert (work / "out.json").read_bytes() == PRECIOUS
    report = json.loads((work / "report.json").read_text())
    assert report["error"] in line and report["stop_reason"] == line.split(": ")[2]
    assert report["after"] == {"nodes": None, "cost": None}


def test_saturation_stops_before_the_memory_runs_out(work: Path) -> None:
    # about 1.9M e-nodes once lowered, 1.2 GB at memory.ENODE_BYTES (1.0 GB measured): over what 1 GiB of address
    # space leaves (60,000 ops, 0.77M e-nodes, fit in it at the 640 bytes an e-node measured)
    (work / "chain.json").write_text(chain(150_000))

    def one_gigabyte() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    # (threads and malloc arenas reserve address space by the core: fixed, so 1 GiB means the same anywhere)
    fails_and_keeps(work, ["lower", "chain.json", "-b", "metal", "-o", "out.json"], "node_limit", "memory",
                    preexec=one_gigabyte, extra_env={"RAYON_NUM_THREADS": "2", "MALLOC_ARENA_MAX": "2"})


# --- backend files ---------------------------------------------------------------------------

def _backend(change: Callable[[dict[str, Any]], None]) -> str:
    doc = json.loads(json.dumps(METAL))
    change(doc)
    return json.dumps(doc)


BAD_BACKENDS = {  # the issue's, run from the command line
    "infinity": (_backend(lambda d: d["cost"].update(launch=1.0)).replace("1.0", "Infinity", 1), "Infinity"),
    "overflowing": (_backend(lambda d: d["cost"].update(flop=1e308)), "cost.flop"),
    "huge integer": (_backend(lambda d: d["cost"].update(launch=7)).replace(": 7,", ": 1" + "0" * 400 + ","), "401 digits"),
    "misspelled weight": (_backend(lambda d: d["cost"].update(weights={"Activation.Gelux": 3})), "'Activation.Gelux'"),
    "deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
}
MORE_BAD_BACKENDS = {  # the same check, from Python
    "negative": (_backend(lambda d: d["cost"].update(byte=-1)), "cost.byte"),
    "nan weight": (_backend(lambda d: d["cost"].update(weights={"Binary.Add": 1})).replace(": 1}", ": NaN}"), "NaN"),
    "bool": (_backend(lambda d: d["cost"].update(view=True)), "cost.view"),
    "unknown key": (_backend(lambda d: d.update(colour="red")), "'colour'"),
    "long name": (_backend(lambda d: d.update(name="x" * 10_000)), "name"),
    "duplicate key": ('{"name": "a", "name": "b"}', "duplicate key"),
    "not an object": ("[]", "expected a JSON object"),
}


@pytest.mark.parametrize("case", sorted(BAD_BACKENDS))
def test_bad_backend_files(case: str, work: Path) -> None:
    text, expected = BAD_BACKENDS[case]
    (work / "b.json").write_text(text)
    fails_and_keeps(work, ["lower", "g.json", "-b", "b.json", "-o", "out.json"], expected)


@pytest.mark.parametrize("case", sorted(MORE_BAD_BACKENDS))
def test_more_bad_backend_files(case: str, tmp_path: Path) -> None:
    text, expected = MORE_BAD_BACKENDS[case]
    (tmp_path / "b.json").write_text(text)
    with pytest.raises(el.BackendError) as e:
        el.load_backend(str(tmp_path / "b.json"))
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_every_weight_label_the_cost_model_asks_for_is_accepted(tmp_path: Path) -> None:
    weights = {"Activation.Erf": 12, "ActivationBackward.Gelu": 20, "Binary.Pow": 9, "MatMul": 1, "Reduce": 2}
    (tmp_path / "b.json").write_text(_backend(lambda d: d["cost"].update(weights=weights, launch=1e30)))
    cost = el.load_backend(str(tmp_path / "b.json")).cost
    assert cost.weight("Activation", "Erf") == 12 and cost.weight("Binary", "Pow") == 9


# --- bounded reading -------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["lower", "/dev/zero", "-b", "metal"], ["lower", "g.json", "-b", "/dev/zero"],
                                  ["run", "g.json", "-i", "/dev/zero"]])
def test_a_device_is_not_read_without_end(args: list[str], work: Path) -> None:
    fails_and_keeps(work, [*args, "-o", "out.json"], "/dev/zero")


def test_a_pipe_is_read_up_to_its_cap(work: Path) -> None:
    p = subprocess.Popen(["sh", "-c", "yes '        ' | head -c 3000000"], stdout=subprocess.PIPE)
    fails_and_keeps(work, ["lower", "g.json", "-b", "/dev/stdin", "-o", "out.json"], "larger than 1 MiB", stdin=p.stdout)
    p.kill()
    p.wait()


def test_an_npz_is_refused_by_what_its_arrays_inflate_to(tmp_path: Path) -> None:
    from egraph_lower.npz import read_npz

    path = tmp_path / "zeros.npz"
    np.savez_compressed(path, x=np.zeros(1 << 22, np.float32))  # 16 MiB of zeros, a few KiB stored
    assert path.stat().st_size < 1 << 20
    with pytest.raises(el.LowerError, match="larger than 1 MiB"):
        read_npz(path, cap=1 << 20)
    assert read_npz(path, cap=1 << 25)["x"].shape == (1 << 22,)


def test_ids_of_any_size_the_format_allows(work: Path) -> None:
    doc = json.loads(EXAMPLE.read_text())
    shift = 2**64 + 12345
    for n in doc["nodes"]:
        n["id"] += shift
        n["inputs"] = [i + shift for i in n["inputs"]]
    doc["outputs"] = [o + shift for o in doc["outputs"]]
    (work / "big.json").write_text(json.dumps(doc))
    r = cli("lower", "big.json", "-b", "metal", "-o", "out.json", "-q", cwd=work)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert el.load_graph(work / "out.json").op_counts() == el.lower(el.load_graph(EXAMPLE), "metal").graph.op_counts()
    line = refused(cli("lower", "big.json", "-b", "metal", "--max-iterations", "0", cwd=work))
    assert f"node {7 + shift} (ActivationBackward{{Gelu}})" in line
    r = cli("explore", "big.json", "-b", "metal", "-q", "--json", "r.json", cwd=work)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def named(name: str, node_name: str) -> str:
    doc = json.loads(EXAMPLE.read_text())
    doc["name"] = name
    doc["nodes"][7]["name"] = node_name
    return json.dumps(doc)


def test_names_reach_no_terminal_dot_or_html_raw(work: Path) -> None:
    (work / "evil.json").write_text(named('x\n}\ndigraph y { a [image="/etc/passwd"] }\n//\x1b[2J\ud800',
                                          "n\x1b[31m\r\ud800\x07"))
    r = cli("lower", "evil.json", "-b", "metal", "-o", "out.json", cwd=work)
    assert r.returncode == 0 and "\x1b" not in r.stdout + r.stderr and "\r" not in r.stdout
    assert r.stdout.splitlines()[0].startswith("lowered x\\x0a}\\x0adigraph")
    r = cli("explore", "evil.json", "-b", "metal", "--dot", "e.dot", "--html", "e.html", "--json", "e.json", cwd=work)
    assert r.returncode == 0 and "\x1b" not in r.stdout + r.stderr, r.stderr
    lines = (work / "e.dot").read_text().splitlines()
    assert [line for line in lines if "digraph" in line and not line.startswith(("//", "  graph [", "digraph egraph {"))] == []
    assert all(line.startswith("//") for line in lines[:lines.index("digraph egraph {")])
    assert "\x1b" not in "".join(lines) and "\r" not in "".join(lines)
    page = (work / "e.html").read_bytes().decode("utf-8")  # valid UTF-8: the lone surrogate is shown escaped
    assert "\\ud800" in page and "\x1b" not in page
    assert json.loads((work / "e.json").read_text())["graph"] == json.loads((work / "evil.json").read_text())["name"]


def test_run_refuses_a_graph_too_large_for_memory(work: Path) -> None:
    b = GraphBuilder("huge")
    huge = b.expand(b.input("x", [1]), [1024, 1024, 1024, 2048])
    (work / "huge.json").write_text(b.build([huge]).to_json())
    np.savez(work / "in.npz", x=np.ones(1, np.float32))
    fails_and_keeps(work, ["run", "huge.json", "-i", "in.npz", "-o", "out.json"], "node 1 (Expand)", "8 TiB")


def test_exact_extractor_on_a_graph_without_outputs(work: Path) -> None:
    doc = json.loads(EXAMPLE.read_text())
    doc["outputs"] = []
    (work / "none.json").write_text(json.dumps(doc))
    r = cli("lower", "none.json", "-b", "metal", "--extractor", "exact", "-o", "out.json", "-q", cwd=work)
    assert r.returncode == 0, r.stderr
    assert el.load_graph(work / "out.json").nodes == []


def test_a_temporary_directory_with_a_quote_in_its_name(work: Path) -> None:
    tmp = work / 'odd"dir\\'
    tmp.mkdir()
    r = cli("lower", "g.json", "-b", "wgpu", "-o", "out.json", "-q", cwd=work, extra_env={"TMPDIR": str(tmp)})
    assert r.returncode == 0, r.stderr
    assert list(tmp.iterdir()) == []


# --- what held, kept -------------------------------------------------------------------------

def test_no_pickle_is_read(work: Path) -> None:
    np.savez(work / "pickled.npz", x=np.array([{"k": 1}], dtype=object))
    fails_and_keeps(work, ["run", "g.json", "-i", "pickled.npz", "-o", "out.json"], "pickled.npz")


def test_output_is_the_same_under_any_hash_seed(work: Path) -> None:
    outs = []
    for seed in ("1", "2"):
        r = cli("lower", "g.json", "-b", "wgpu", "-q", cwd=work, extra_env={"PYTHONHASHSEED": seed})
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]


def test_explore_names_the_limit_too(work: Path) -> None:
    fails_and_keeps(work, ["explore", "g.json", "-b", "metal", "--max-iterations", "0", "--json", "out.json"],
                    "iteration_limit: node 7 (ActivationBackward{Gelu}) was not yet lowered after 0 iterations")
