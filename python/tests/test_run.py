"""elvis.run: reports as Python data, located errors, determinism.

Each test checks against something independent of the binding: closed
forms of the scenario (messages sent and received, hop counts), the
command line's own exit codes and messages, or a second run.
"""

import json
import os
import pathlib
import subprocess

import pytest

import elvis

ROOT = pathlib.Path(__file__).resolve().parents[2]

FIG2 = """\
[Networks]
\t[Network id='3']
\t\t[IP ip='123.45.67.89']
[Machines]
\t[Machine name='sender' count='4']
\t\t[Networks]
\t\t\t[Network id='3']
\t\t[Protocols]
\t\t\t[Protocol name='IPv4']
\t\t\t[Protocol name='UDP']
\t\t[Applications]
\t\t\t[Application name='send_message' message='Hello!' to='capturer' port='0xbeef']
\t[Machine name='capturer']
\t\t[Networks]
\t\t\t[Network id='3']
\t\t[Protocols]
\t\t\t[Protocol name='IPv4']
\t\t\t[Protocol name='UDP']
\t\t[Applications]
\t\t\t[Application name='capture' ip='123.45.67.89' port='0xbeef' message_count='4']
"""


def test_a_run_returns_the_report_as_python_data():
    r = elvis.run(FIG2, frames=False)
    assert isinstance(r, dict)
    # Four senders, one datagram each, all delivered to the capturer.
    assert r["packets"]["udp_sent"] == 4
    assert r["packets"]["udp_delivered"] == 4
    assert r["machines"] == 5
    apps = {(a["group"], a["application"]): a for a in r["applications"]}
    assert apps[("sender", "send_message")]["finished"] == 4
    assert apps[("capturer", "capture")]["finished"] == 1


def test_a_file_path_and_its_text_give_the_same_report(tmp_path):
    f = tmp_path / "fig2.ndl"
    f.write_text(FIG2)
    by_path = elvis.run(str(f), frames=False)
    by_pathlike = elvis.run(f, frames=False)
    by_text = elvis.run(FIG2, frames=False)
    for r in (by_path, by_pathlike):
        assert r["packets"] == by_text["packets"]
        assert r["events"] == by_text["events"]


def test_the_same_seed_gives_the_same_report_and_until_stops_the_clock():
    text = (ROOT / "examples/ndl/cubic-vs-compound.ndl").read_text()
    a = elvis.run(text, seed=7, until="2s", frames=False)
    b = elvis.run(text, seed=7, until=2, frames=False)
    drop = lambda r: {k: v for k, v in r.items() if k not in ("performance",)}
    assert drop(a) == drop(b)
    assert a["sim_time_ns"] == 2_000_000_000


def test_the_report_matches_the_command_line(tmp_path):
    """The binding and `elvis run --report` compute the same run."""
    exe = pathlib.Path(os.environ.get("ELVIS_BIN", ROOT / "target/release/elvis"))
    if not exe.exists():
        pytest.skip("no elvis binary (cargo build --release, or set ELVIS_BIN)")
    f = tmp_path / "fig2.ndl"
    f.write_text(FIG2)
    out = tmp_path / "r.json"
    subprocess.run([str(exe), "run", str(f), "--report", str(out), "--quiet"], check=True)
    cli = json.loads(out.read_text())
    py = elvis.run(f, frames=False)
    for key in ("packets", "events", "sim_time_ns", "applications", "networks"):
        assert py[key] == cli[key], key


def test_a_syntax_error_is_an_ndl_error_with_its_place():
    with pytest.raises(elvis.NdlError) as e:
        elvis.run("[Netwroks]\n")
    err = e.value
    assert isinstance(err, ValueError)
    assert (err.file, err.line, err.col) == ("<string>", 1, 1)
    assert err.message == "unknown section `[Netwroks]`"
    assert err.hint == "did you mean `[Networks]`?"
    assert str(err) == "<string>:1:1: error: unknown section `[Netwroks]` (hint: did you mean `[Networks]`?)"


def test_a_builder_error_in_a_file_names_the_file_line_and_column(tmp_path):
    f = tmp_path / "bad.ndl"
    f.write_text(FIG2.replace("port='0xbeef']\n\t[Machine", "port='0xbeef' colour='red']\n\t[Machine"))
    with pytest.raises(elvis.NdlError) as e:
        elvis.run(f)
    err = e.value
    assert err.file == str(f)
    assert err.line == 12
    assert "has no option 'colour'" in err.message


def test_an_unknown_template_is_located():
    bad = "[Template name='udp']\n\t[Protocol name='UDP']\n" + FIG2.replace(
        "[Machine name='capturer']", "[Machine name='capturer' template='upd']"
    )
    with pytest.raises(elvis.NdlError) as e:
        elvis.check(bad)
    assert (e.value.line, e.value.col) == (15, 37)
    assert "unknown template 'upd'" in str(e.value)
    assert e.value.hint == "did you mean 'udp'?"


def test_a_missing_file_is_an_ndl_error():
    with pytest.raises(elvis.NdlError) as e:
        elvis.run("no/such/file.ndl")
    assert "cannot read the file" in str(e.value)


def test_bad_arguments_are_python_errors():
    with pytest.raises(ValueError):
        elvis.run(FIG2, until="10 parsecs")
    with pytest.raises(ValueError):
        elvis.run(FIG2, seed=-1)
    with pytest.raises(TypeError):
        elvis.run(FIG2, until=[1])


def test_warnings_are_issued_with_their_place():
    arp = FIG2.replace(
        "\t\t\t[Protocol name='UDP']\n\t\t[Applications]\n\t\t\t[Application name='send_message'",
        "\t\t\t[Protocol name='UDP']\n\t\t\t[Protocol name='ARP' local='123.45.67.90' default='capturer']\n"
        "\t\t[Applications]\n\t\t\t[Application name='send_message'",
    )
    with pytest.warns(UserWarning, match=r"<string>:11:25: ARP local/default"):
        r = elvis.run(arp, frames=False)
    assert r.warnings[0][1:3] == (11, 25)
    assert r["packets"]["udp_delivered"] == 4


def test_tables_are_dataframes_with_pandas():
    pandas = pytest.importorskip("pandas")
    r = elvis.run(FIG2)
    assert isinstance(r["applications"], pandas.DataFrame)
    assert set(r["applications"]["group"]) == {"sender", "capturer"}
    assert isinstance(r["packets"], dict)


def test_a_scenario_built_in_python_runs_as_its_ndl_file_does():
    s = elvis.Scenario(seed=3)
    s.network("3", ip="123.45.67.89")
    udp = ["IPv4", "UDP"]
    s.machine(
        "sender",
        count=4,
        networks=["3"],
        protocols=udp,
        applications=[("send_message", {"message": "Hello!", "to": "capturer", "port": "0xbeef"})],
    )
    s.machine(
        "capturer",
        networks=["3"],
        protocols=udp,
        applications=[
            ("capture", {"ip": "123.45.67.89", "port": "0xbeef", "message_count": 4})
        ],
    )
    built = s.run(frames=False)
    from_text = elvis.run(FIG2, seed=3, frames=False)
    assert built["packets"] == from_text["packets"]
    assert built["packets"]["udp_delivered"] == 4
    # The same scenario as the hand-written file, key for key.
    assert s.ndl().splitlines()[1:] == FIG2.splitlines()


def test_a_python_scenario_error_names_its_ndl_line():
    s = elvis.Scenario().network("lan").machine("a", networks=["wan"])
    with pytest.raises(elvis.NdlError) as e:
        s.run()
    line = s.ndl().splitlines()[e.value.line - 1]
    assert "wan" in line, (str(e.value), line)
    with pytest.raises(ValueError):
        elvis.Scenario().network("it's").ndl()
