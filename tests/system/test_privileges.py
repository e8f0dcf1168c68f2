"""Issue 25, items 1-7: a pull request's build or benchmark, or a local user, must not get root
through duet (docs/isolation.md, "What runs as root").

Every test is an exploit attempt, made for real: a throwaway user with passwordless sudo (made
with ``useradd``) owns a git repository and runs ``sudo python -m duet_bench compare`` in it, as
a CI job on a hosted runner does; the repository's build, benchmarks and git configuration
attack. The target is a root-owned 0600 file in a root-only directory: afterwards its mode,
owner and content must be what they were, and nothing of its content may appear on duet's
standard output or error, in the results directory or anywhere the user can read.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import secrets
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# The exploits run on the host (cgroup v1 there), each from a throwaway user through real sudo.
# Only the two whose subject lives in a cgroup (a build's or a discovery step's container, killed
# with what it left: cgroup.kill on v2) also run in the guest (marker `guest`, cgroup v2 under
# systemd): the others attack duet's file handling (links planted in its directories, the
# environment, the uid a step runs as), the same code whatever the cgroup version, and took
# 25-70 s each under TCG (tests/README.md, "What runs where").
pytestmark = [pytest.mark.root, pytest.mark.slow]

#: What the sides and builds of these tests see of the CI's secrets (finding 6).
TOKENS = {
    "GITHUB_TOKEN": "ghs_" + "a" * 20,
    "DUET_GITLAB_TOKEN": "glpat-" + "b" * 20,
    "CI_JOB_TOKEN": "job-" + "c" * 20,
    "ACTIONS_RUNTIME_TOKEN": "rt-" + "d" * 20,
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "idt-" + "e" * 20,
    "CI_REGISTRY_PASSWORD": "reg-" + "f" * 20,
    # Issue 33, finding 2: not on any list of known names.
    "CI_BUILD_TOKEN": "build-" + "g" * 20,
    "ACME_DEPLOY_KEY": "acme-" + "h" * 20,
}


@dataclass(frozen=True)
class Target:
    """The root-only file the exploits aim at."""

    path: Path
    #: What no output may show.
    secret: str
    #: The file's text (the secret, or a line that carries it).
    content: str

    def assert_untouched(self, *outputs: str) -> None:
        st = os.lstat(self.path)
        assert stat.S_ISREG(st.st_mode), f"{self.path} is no longer a regular file"
        assert stat.S_IMODE(st.st_mode) == 0o600, f"{self.path} mode {st.st_mode:o}"
        assert (st.st_uid, st.st_gid) == (0, 0), f"{self.path} owner {st.st_uid}:{st.st_gid}"
        assert self.path.read_text() == self.content, f"{self.path} was written"
        for text in outputs:
            assert self.secret not in text, "the target's content leaked"


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gid: int
    home: Path

    def run(
        self, *argv: str, cwd: Path | None = None, **kw: object
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runuser", "-u", self.name, "--", *argv],
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            check=False,
            **kw,  # type: ignore[call-overload]
        )

    def popen(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["runuser", "-u", self.name, "--", *argv], cwd=self.home, text=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip


@pytest.fixture
def target(tmp_path: Path) -> Target:
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o755)  # the path is known to the attacker; the vault is not open
    path = vault / "secret"
    content = "duet-secret-" + secrets.token_hex(8)
    path.write_text(content)
    os.chmod(path, 0o600)
    return Target(path, content, content)


def _make_user() -> User:
    for tool in ("useradd", "userdel", "sudo", "runuser"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed; scripts/bootstrap.sh installs it (CI has it)")
    name = "duet-p" + secrets.token_hex(4)
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
    entry = pwd.getpwnam(name)
    return User(name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def _lock_file(user: User) -> Path:
    return Path("/var/tmp") / f"{user.name}.lock"


def _remove_user(user: User) -> None:
    _lock_file(user).unlink(missing_ok=True)
    Path("/etc/sudoers.d", user.name).unlink(missing_ok=True)
    # Whatever the user left running (nothing, if duet cleaned up) goes, by pid.
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == user.uid:
                    os.kill(int(entry), signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                continue
    subprocess.run(["userdel", "--remove", user.name], check=False, capture_output=True)
    shutil.rmtree(user.home, ignore_errors=True)


@pytest.fixture
def user() -> Iterator[User]:
    """A throwaway user with passwordless sudo (as `runner` on a hosted runner)."""
    if os.geteuid() != 0:
        pytest.skip("creating a user needs root")
    made = _make_user()
    try:
        sudoers = Path("/etc/sudoers.d", made.name)
        sudoers.write_text(f"{made.name} ALL=(ALL) NOPASSWD: ALL\n")
        sudoers.chmod(0o440)
        yield made
    finally:
        _remove_user(made)


@pytest.fixture
def other_user() -> Iterator[User]:
    """Another local user, without sudo."""
    if os.geteuid() != 0:
        pytest.skip("creating a user needs root")
    made = _make_user()
    try:
        yield made
    finally:
        _remove_user(made)


def _config(build: str, *benchmarks: str, extra: str = "", runs: int = 2) -> str:
    head = f'runs = {runs}\niterations = 2\nwarmup = 0\nisolation = "cgroup"\n'
    head += f"build = {json.dumps(build)}\n{extra}"
    return head + "".join(benchmarks)


def _bench(name: str, command: str, kind: str = "command") -> str:
    return f"\n[[benchmark]]\nname = {json.dumps(name)}\n{kind} = {json.dumps(command)}\n"


def _repo(user: User, files: dict[str, str], git_config: dict[str, str] | None = None) -> Path:
    """The user's own repository: two commits (HEAD~1 and HEAD), ``files`` in both."""
    repo = user.home / "project"
    repo.mkdir()
    os.chown(repo, user.uid, user.gid)
    ident = ["-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    assert user.run("git", "init", "-q", "-b", "main", cwd=repo).returncode == 0
    for round_ in (1, 2):
        for name, text in files.items():
            path = repo / name
            path.write_text(text + ("" if round_ == 1 else "\n"))
            os.chown(path, user.uid, user.gid)
            path.chmod(0o755)
        assert user.run("git", "add", "-A", cwd=repo).returncode == 0
        done = user.run("git", *ident, "commit", "-q", "-m", f"c{round_}", cwd=repo)
        assert done.returncode == 0, done.stderr
    for key, value in (git_config or {}).items():
        assert user.run("git", "config", key, value, cwd=repo).returncode == 0
    return repo


def _duet(
    user: User,
    repo: Path,
    *args: str,
    env: dict[str, str] | None = None,
    out: Path | None = None,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``sudo duet compare HEAD~1 HEAD`` as ``user`` in ``repo``; the run and its results dir
    (``out``, by default ``~/out``)."""
    out = out or user.home / "out"
    # PYTHONPATH: the suite run from another copy of the sources measures that copy. A
    # measuring lock of the test's own: another duet measuring on the machine must not turn
    # the exploit into a refusal that proves nothing.
    passed = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    passed["DUET_LOCK"] = str(_lock_file(user))
    extra = [f"{k}={v}" for k, v in {**passed, **(env or {})}.items()]
    done = user.run(
        "sudo", "-n", "env", *extra, sys.executable, "-m", "duet_bench", "compare",
        "HEAD~1", "HEAD", "--out", str(out), "--quiet", "--no-plots", "--fail-on", "never",
        "--reps", "200", *args,
        cwd=repo, timeout=300,
    )  # fmt: skip
    return done, out


def _duet_while_planting(
    user: User, repo: Path, planter: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """:func:`_duet` while ``planter`` (Python, run as the user) keeps planting links; stopped
    when duet ends."""
    plant = user.popen("python3", "-c", planter)
    try:
        return _duet(user, repo)
    finally:
        plant.kill()
        plant.wait()


def _assert_ran_as_the_user_without_secrets(user: User, records: list[Path], what: str) -> None:
    """Each record (``id -u`` then ``env``, written by the pull request's program) says it ran
    as ``user`` and saw none of the CI's secrets."""
    for record in records:
        uid, *env = record.read_text().splitlines()
        assert int(uid) == user.uid, f"{what} ran as uid {uid}, not as {user.name} ({record.name})"
        leaked = [name for name, value in TOKENS.items() if any(value in line for line in env)]
        assert not leaked, f"these secrets reached {what}: {leaked}"


def _everything(done: subprocess.CompletedProcess[str], *dirs: Path) -> str:
    """duet's output and every readable file under ``dirs``."""
    texts = [done.stdout, done.stderr]
    for d in dirs:
        for path in d.rglob("*"):
            if path.is_file() and not path.is_symlink():
                texts.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(texts)


def test_cleanup_never_chmods_through_a_link(user: User, target: Target) -> None:
    """Finding 1: the candidate's build replaces its worktree with a link to the target; the
    removal of the worktrees must not make the target 0777."""
    build = (
        'if [ "$DUET_SIDE" = candidate ]; then d=$(pwd); mv "$d" "$d.x" && '
        f'ln -s {target.path} "$d"; fi; true'
    )
    repo = _repo(user, {"duet.toml": _config(build, _bench("b", "true"))})
    done, out = _duet(user, repo)
    target.assert_untouched(_everything(done, out))
    assert (out / "logs" / "build-candidate.log").exists(), done.stderr  # the attack ran


def test_root_never_opens_a_planted_stderr_file(user: User, target: Target) -> None:
    """Finding 2: while duet runs, the user plants ``stderr.txt -> target`` in every side
    directory it finds; root must not truncate the target nor write a benchmark's stderr in."""
    # A benchmark name of this test's own: the planter attacks only this run's directories,
    # never those of another duet running on the machine.
    name = "b" + secrets.token_hex(6)
    runs = f"/var/tmp/duet-*/{name}-r*"
    planter = textwrap.dedent(
        f"""
        import glob, os, time
        end = time.monotonic() + 120
        while time.monotonic() < end:
            for d in glob.glob("{runs}/*") + glob.glob("{runs}/*/*"):
                if os.path.basename(d) in ("baseline", "candidate"):
                    try:
                        os.symlink({str(target.path)!r}, os.path.join(d, "stderr.txt"))
                    except OSError:
                        pass
        """
    )
    repo = _repo(user, {"duet.toml": _config("true", _bench(name, "echo PWNED >&2"), runs=6)})
    done, out = _duet_while_planting(user, repo, planter)
    target.assert_untouched(_everything(done, out))
    assert done.returncode == 0, done.stdout + done.stderr  # measured while planting


@pytest.mark.parametrize("victim", ["stderr.txt", "samples.jsonl"])
def test_reading_back_a_side_never_follows_a_link(user: User, target: Target, victim: str) -> None:
    """Finding 3: a side replaces its own stderr file (or samples file) with a link to the
    target and fails; root must not copy the target onto the terminal or into the results."""
    # A samples file's error line is what a reader would pass on.
    target.path.write_text(json.dumps({"error": target.secret}) + "\n")
    target = Target(target.path, target.secret, target.path.read_text())
    script = f'd=$(dirname "$DUET_SAMPLES")\nln -sf {target.path} "$d/{victim}"\nexit 1\n'
    bench = _bench("b", "sh ./bench.sh", kind="native")
    repo = _repo(user, {"duet.toml": _config("true", bench), "bench.sh": script})
    done, out = _duet(user, repo)
    target.assert_untouched(_everything(done, out))
    # The side ran, replaced its file and failed: what root read back is in the results.
    assert "exit code 1" in (out / "results.json").read_text(), done.stderr


def test_the_users_git_config_never_runs_as_root(user: User, target: Target) -> None:
    """Finding 4: ``core.fsmonitor`` of the user's repository runs whatever git status duet
    starts; it must run as the user, who cannot touch the target."""
    hook = user.home / "fsmonitor.sh"
    hook.write_text(
        f"#!/bin/sh\nid -u >> {user.home}/fsmonitor-uid\nchmod 0666 {target.path}\n"
        f"cat {target.path} >&2\ncat {target.path} > {user.home}/leak\nexit 1\n"
    )
    os.chown(hook, user.uid, user.gid)
    hook.chmod(0o755)
    repo = _repo(
        user, {"duet.toml": _config("true", _bench("b", "true"))}, {"core.fsmonitor": str(hook)}
    )
    # Uncommitted changes: duet asks git status about the checkout (the HEAD side's warning).
    (repo / "duet.toml").write_text((repo / "duet.toml").read_text() + "# edited\n")
    done, out = _duet(user, repo)
    target.assert_untouched(_everything(done, out, user.home))
    ran_as = (user.home / "fsmonitor-uid").read_text().split()
    assert ran_as, "git status never ran the fsmonitor: the test tests nothing"
    assert set(ran_as) == {str(user.uid)}, f"the fsmonitor ran as uids {ran_as}"


def test_a_sides_tmp_cannot_be_swapped_for_a_link(user: User, tmp_path: Path) -> None:
    """The sandbox's directory (the side's private /tmp) is bind-mounted by name: while duet
    runs, the user swaps every one they find for a link to a directory of root's (it lay in
    the side's directory, the user's once the side starts). The side's /tmp must still be the
    directory duet made."""
    decoy = tmp_path / "decoy"
    decoy.mkdir(mode=0o755)
    (decoy / "decoy-marker").write_text("root's\n")
    name = "b" + secrets.token_hex(6)
    swaps = user.home / "swaps"
    runs = f"/var/tmp/duet-*/{name}-r*"
    planter = textwrap.dedent(
        f"""
        import glob, os, time
        end, found = time.monotonic() + 120, set()
        while time.monotonic() < end:
            for d in glob.glob("{runs}/*tmp-*") + glob.glob("{runs}/*/*tmp-*"):
                if not os.path.islink(d) and not d.endswith(".x"):
                    found.add(d)
                    try:
                        os.rename(d, d + ".x")
                        os.symlink({str(decoy)!r}, d)
                    except OSError:
                        pass
            with open("{swaps}.new", "w") as f:
                f.write(str(len(found)))
            os.replace("{swaps}.new", "{swaps}")
        """
    )
    bench = _bench(name, f"ls -a /tmp >> {user.home}/seen-$DUET_SIDE")
    repo = _repo(user, {"duet.toml": _config("true", bench, runs=8)})
    done, _ = _duet_while_planting(user, repo, planter)
    assert done.returncode == 0, done.stdout + done.stderr
    assert int(swaps.read_text()) > 0, "the planter found no sandbox: the test tests nothing"
    seen = "".join(p.read_text() for p in user.home.glob("seen-*"))
    assert seen, "the benchmark never listed its /tmp"
    assert "decoy-marker" not in seen, "a side's /tmp was the directory the user's link named"


def test_the_worktree_caches_lock_files_never_lead_root_through_a_link(
    user: User, target: Target
) -> None:
    """The lock files of the worktree cache are in the user's cache: while duet runs, the user
    flips ``~/.cache/duet`` between the real directory and one whose cache directory is a link
    to a directory of root's. Root must create, lock and remove nothing there (the cache's
    owner check at the start does not see a swap made after it)."""
    repo = _repo(user, {"duet.toml": _config("true", _bench("b", "true"))})
    key = hashlib.sha256(str((repo / ".git").resolve()).encode()).hexdigest()[:16]
    cache = user.home / ".cache" / "duet"
    planter = textwrap.dedent(
        f"""
        import os, time
        cache, evil = {str(cache)!r}, {str(cache) + ".evil"!r}
        os.makedirs(evil + "/worktrees", exist_ok=True)
        os.symlink({str(target.path.parent)!r}, evil + "/worktrees/{key}")
        end = time.monotonic() + 120
        # Once duet made (and checked) the cache directory and checks out a worktree.
        def started():
            try:
                return any(n.endswith(".stamp") for n in os.listdir(cache + "/worktrees/{key}"))
            except OSError:
                return False
        while not started() and time.monotonic() < end:
            time.sleep(0.0005)
        while time.monotonic() < end:
            try:
                os.rename(cache, cache + ".real")
                os.rename(evil, cache)
                time.sleep(0.0005)
                os.rename(cache, evil)
                os.rename(cache + ".real", cache)
            except OSError:
                time.sleep(0.0005)
        """
    )
    user.run("mkdir", "-p", str(cache / "worktrees"))
    done, out = _duet_while_planting(user, repo, planter)
    target.assert_untouched(_everything(done, out))
    assert os.listdir(target.path.parent) == [target.path.name], "root made files there"


@pytest.mark.parametrize(
    ("planted", "name"),
    [("duet-results", "results.json"), ("duet-results/logs", "build-candidate.log")],
)
def test_the_results_directory_never_leads_root_through_a_link(
    user: User, target: Target, planted: str, name: str
) -> None:
    """The results directory is in the user's checkout, which the pull request's tree fills: a
    link there, in place of the directory or of its ``logs``, must not have root replace or
    write a file where the link points (a file root writes there under its own name)."""
    aimed = target.path.with_name(name)
    target.path.rename(aimed)
    target = Target(aimed, target.secret, target.content)
    repo = _repo(user, {"duet.toml": _config("true", _bench("b", "true"))})
    if "/" in planted:
        assert user.run("mkdir", "-p", str(repo / Path(planted).parent)).returncode == 0
    assert user.run("ln", "-s", str(target.path.parent), str(repo / planted)).returncode == 0
    done, _ = _duet(user, repo, out=repo / "duet-results")
    target.assert_untouched(_everything(done, user.home))
    assert os.listdir(target.path.parent) == [name], "root wrote where the link points"
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{repo / planted} is a symbolic link in a directory that uid {user.uid}" in done.stderr
    assert "fix: give the path without that link" in done.stderr


def test_the_barrier_file_is_closed_to_other_users(
    user: User, other_user: User, tmp_path: Path
) -> None:
    """Finding 5: another local user must not be able to open a run's barrier file (writing
    its abort word stops every run). The benchmark tells where its barrier is (its worker's
    spec); the other user tries to open it for writing while the run lasts."""
    shared = Path("/var/tmp") / f"priv-test-{secrets.token_hex(6)}"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    found = shared / "barriers"
    # The benchmark finds its worker's spec among its ancestors' arguments.
    probe_py = textwrap.dedent(
        f"""
        import json, os, time
        pid = os.getppid()
        while pid > 1:
            args = open(f"/proc/{{pid}}/cmdline", "rb").read().split(b"\\0")
            specs = [a for a in args if a.endswith(b"spec.json")]
            if specs:
                with open("{found}", "a") as out:
                    print(json.load(open(specs[0]))["barrier"], file=out)
                break
            pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
        time.sleep(0.3)
        """
    )
    prober = textwrap.dedent(
        f"""
        import os, time
        end = time.monotonic() + 120
        seen, opened = set(), 0
        while time.monotonic() < end:
            try:
                paths = open("{found}").read().split()
            except OSError:
                paths = []
            for path in paths:
                try:
                    os.close(os.open(path, os.O_RDWR))
                    opened += 1
                except FileNotFoundError:
                    continue
                except OSError:
                    pass
                seen.add(path)
            with open("{other_user.home}/probe.new", "w") as f:
                f.write(f"{{len(seen)}} {{opened}}")
            os.replace("{other_user.home}/probe.new", "{other_user.home}/probe")
            time.sleep(0.01)
        """
    )
    bench = _bench("b", "python3 probe.py")
    repo = _repo(user, {"duet.toml": _config("true", bench), "probe.py": probe_py})
    probe = other_user.popen("python3", "-c", prober)
    try:
        done, _ = _duet(user, repo)
    finally:
        probe.kill()
        probe.wait()
        shutil.rmtree(shared, ignore_errors=True)
    assert done.returncode == 0, done.stdout + done.stderr
    seen, opened = map(int, (other_user.home / "probe").read_text().split())
    assert seen > 0, "the prober never saw a barrier file: the test tests nothing"
    assert opened == 0, f"another user opened the barrier file {opened} times"


def _secrets_seen(user: User, keep: tuple[str, ...] = ()) -> tuple[str, set[str]]:
    # mktemp, not $$: each build and side has a PID namespace of its own, where $$ repeats.
    dump = f"env > $(mktemp {user.home}/env-$DUET_SIDE-XXXXXX)"
    repo = _repo(user, {"duet.toml": _config(dump, _bench("b", dump))})
    keeping = [arg for name in keep for arg in ("--keep-env", name)]
    done, out = _duet(user, repo, *keeping, env=TOKENS)
    assert done.returncode == 0, done.stdout + done.stderr
    dumps = list(user.home.glob("env-*"))
    assert len(dumps) > 2, "the build and benchmarks wrote no environment: the test tests nothing"
    text = _everything(done, out) + "".join(p.read_text() for p in dumps)
    return text, {name for name, value in TOKENS.items() if value in text}


def test_ci_secrets_never_reach_builds_or_benchmarks(user: User) -> None:
    """Finding 6: the CI's tokens in duet's environment are not in the environment of the
    builds and benchmarks (nor in the logs and results)."""
    _, seen = _secrets_seen(user)
    assert not seen, f"these secrets reached the pull request's code: {sorted(seen)}"


def test_keep_env_passes_a_token_on_purpose(user: User) -> None:
    """``--keep-env`` keeps one on purpose: only that one gets through. An option, not a key of
    duet.toml: the configuration is read at HEAD, which the pull request writes."""
    _, seen = _secrets_seen(user, keep=("CI_JOB_TOKEN",))
    assert seen == {"CI_JOB_TOKEN"}


def test_the_invoking_shells_environment_is_out_of_reach(user: User) -> None:
    """Finding 2 (issue 33): the user's shell has the CI's tokens in its environment and runs
    ``sudo -E duet``; the build and the benchmarks (as that user) read ``/proc/*/environ`` of
    every process they can see. In a PID namespace of their own, with their own ``/proc``, they
    see none of the shell's (nor duet's, nor the other side's); before, the shell's gave
    every token away. Each probe must read at least its own environment (else the test
    tests nothing)."""
    probe = (
        "f=$(mktemp {home}/environs-{what}-XXXXXX); "
        "for e in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $e 2>/dev/null; done > $f; true"
    )
    build, bench = (probe.format(home=user.home, what=what) for what in ("build", "benchmark"))
    repo = _repo(user, {"duet.toml": _config(build, _bench("b", bench))})
    passed = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    passed["DUET_LOCK"] = str(_lock_file(user))
    out = user.home / "out"
    duet_command = [
        "sudo", "-n", "-E", "env", *(f"{k}={v}" for k, v in passed.items()), sys.executable,
        "-m", "duet_bench", "compare", "HEAD~1", "HEAD", "--out", str(out), "--quiet",
        "--no-plots", "--fail-on", "never", "--reps", "200",
    ]  # fmt: skip
    # `; echo`: the shell waits for sudo instead of exec'ing it, as a CI job's shell does.
    shell = f"{shlex.join(duet_command)}; echo exit=$?"
    tokens = [f"{k}={v}" for k, v in TOKENS.items()]
    done = user.run("env", *tokens, "sh", "-c", shell, cwd=repo, timeout=300)
    assert "exit=0" in done.stdout, done.stdout + done.stderr
    for what in ("build", "benchmark"):
        dumps = list(user.home.glob(f"environs-{what}-*"))
        assert len(dumps) >= 2, f"no {what} read an environment: the test tests nothing"
        for dump in dumps:
            assert "PATH=" in dump.read_text(), f"{dump} is empty: the test tests nothing"
        text = "".join(p.read_text() for p in dumps)
        leaked = sorted(name for name, value in TOKENS.items() if value in text)
        assert not leaked, f"a {what} read these from another process: {leaked}"


def test_suite_discovery_runs_as_the_user_without_secrets(user: User) -> None:
    """A suite's discovery runs the version's own programs (a cargo build script, the built
    benchmark binary listing its benchmarks): as the invoking user, as the builds, never as
    root, and without the CI's secrets. Here the "benchmark tool" is the pull request's script,
    which records who ran it when asked for its list."""
    seen = user.home / "discovered"
    script = (
        "#!/bin/sh\n"
        f'case "$1" in --benchmark_list_tests*) {{ id -u; env; }} > $(mktemp {seen}-XXXXXX); '
        "echo BM_x;; esac\n"
    )
    suite = '\n[[suite]]\nadapter = "google-benchmark"\npath = "bench.sh"\nname = "gb"\n'
    repo = _repo(user, {"bench.sh": script, "duet.toml": _config("true") + suite})
    done, _ = _duet(user, repo, env=TOKENS)
    records = list(user.home.glob("discovered-*"))
    assert len(records) == 2, f"discovery ran {len(records)} times: {done.stdout + done.stderr}"
    _assert_ran_as_the_user_without_secrets(user, records, "the discovery")


@pytest.mark.parametrize("command", ["report", "analyze", "merge"])
def test_root_reads_a_results_file_as_the_user(user: User, tmp_path: Path, command: str) -> None:
    """A results file given to ``sudo duet report`` (or analyze, comment, merge) is the user's
    path: a link there to a root-only file must not have root read it. The root-only file here
    is JSON whose schema field is the secret, so an error that quoted the field would leak it."""
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o755)
    secret = "duet-secret-" + secrets.token_hex(8)
    root_only = vault / "results.json"
    root_only.write_text(json.dumps({"schema": secret, "benchmarks": []}))
    os.chmod(root_only, 0o600)
    link = user.home / "results.json"
    user.run("ln", "-s", str(root_only), str(link))
    assert link.is_symlink()
    passed = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    extra = [f"{k}={v}" for k, v in passed.items()]
    args = [command, str(link)]
    if command == "merge":
        args += [str(link), "--out", str(user.home / "merged")]
    done = user.run(
        "sudo", "-n", "env", *extra, sys.executable, "-m", "duet_bench", *args, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Permission denied" in done.stderr, done.stderr
    assert secret not in done.stdout + done.stderr, "the root-only file was read through the link"


def test_root_reads_a_configuration_file_as_the_user(user: User, tmp_path: Path) -> None:
    """The configuration file given to ``sudo duet calibrate --config`` is the user's path too: a
    link there to a root-only TOML file must not have root parse it (an unknown key would be
    quoted in the error)."""
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o755)
    secret = "duet-secret-" + secrets.token_hex(8)
    root_only = vault / "duet.toml"
    root_only.write_text(f'{secret} = 1\n[[benchmark]]\nname = "x"\ncommand = "true"\n')
    os.chmod(root_only, 0o600)
    link = user.home / "duet.toml"
    user.run("ln", "-s", str(root_only), str(link))
    extra = [f"PYTHONPATH={os.environ['PYTHONPATH']}"] if "PYTHONPATH" in os.environ else []
    done = user.run(
        "sudo", "-n", "env", *extra, sys.executable, "-m", "duet_bench", "calibrate",
        "--bench", "x", "--config", str(link), timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Permission denied" in done.stderr, done.stderr
    assert secret not in done.stdout + done.stderr, "the root-only file was read through the link"


#: A daemon that beats (appends a line to the file named by its $0) while it runs. Found
#: afterwards by that file's name in its command line: the pid it would report is its PID
#: namespace's, not the host's (docs/isolation.md).
_BEATING = (
    "setsid sh -c 'while :; do echo x >> \"$0\"; sleep 0.05; done' {file} "
    "</dev/null >/dev/null 2>&1 &"
)


def _still_beating(files: str, seen: Path) -> str:
    """A benchmark that appends to ``seen`` when a daemon writing one of ``files`` (a shell
    pattern) is still alive: the file grows within 0.3 s (a daemon's beat is every 0.05 s)."""
    return (
        f'for f in {files}; do a=$(wc -l < "$f"); sleep 0.3; b=$(wc -l < "$f"); '
        f'[ "$a" != "$b" ] && echo alive >> {seen}; done; true'
    )


def _processes_naming(needle: str) -> list[int]:
    """Live processes (not zombies) whose command line contains ``needle``, in the host's view."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if needle.encode() in cmdline and _alive(int(entry)):
                found.append(int(entry))
    return found


def test_build_daemons_are_gone_before_measuring(user: User) -> None:
    """Finding 7: a ``setsid`` child of the build must be killed before the measurement
    starts, and not outlive duet. Host only: the build's container is ``run_job``'s, which the
    discovery's test below takes in the guest too (cgroup v2, ``cgroup.kill``)."""
    beats = user.home / "beats"
    build = _BEATING.format(file=beats) + f" while [ ! -s {beats} ]; do sleep 0.05; done"
    seen = user.home / "seen"
    repo = _repo(user, {"duet.toml": _config(build, _bench("b", _still_beating(str(beats), seen)))})
    try:
        done, _ = _duet(user, repo)
        assert done.returncode == 0, done.stdout + done.stderr
        assert beats.exists(), "the build started no daemon: the test tests nothing"
        assert not seen.exists(), "the build's daemon ran during the measurement"
        assert not _processes_naming(str(beats)), "the build's daemon outlived duet"
    finally:
        for pid in _processes_naming(str(beats)):
            _kill(pid)


def test_pytest_collection_runs_as_the_user_without_secrets(user: User) -> None:
    """A pytest-benchmark suite is collected by the version's own interpreter (its conftest.py
    imported): as the invoking user, without the CI's secrets, never as root. The "interpreter"
    here is the pull request's script, which records who ran it and what it saw (a real one
    would need a python the throwaway user can run, which CI's root-only pyenv is not)."""
    seen = user.home / "collected"
    interpreter = f"#!/bin/sh\n{{ id -u; env; }} > $(mktemp {seen}-XXXXXX)\n"
    suite = (
        'python = "interpreter.sh"\n\n[[suite]]\nadapter = "pytest-benchmark"\n'
        'path = "test_x.py"\nname = "pb"\n'
    )
    files = {"interpreter.sh": interpreter, "test_x.py": "", "duet.toml": _config("true") + suite}
    repo = _repo(user, files)
    done, _ = _duet(user, repo, env=TOKENS)
    records = list(user.home.glob("collected-*"))
    assert records, f"the version's interpreter never ran: {done.stdout + done.stderr}"
    _assert_ran_as_the_user_without_secrets(user, records, "the collection")


@pytest.mark.guest
def test_discovery_daemons_are_gone_before_measuring(user: User) -> None:
    """As the build's: a ``setsid`` child the suite's discovery leaves (here the "benchmark
    tool" asked for its list starts one) is killed before the measurement starts, and does not
    outlive duet."""
    beats = user.home / "discovery-daemon"
    # One file per listing (mktemp), written before the listing ends.
    sleeper = (
        f"f=$(mktemp {beats}-XXXXXX); "
        + _BEATING.format(file="$f")
        + ' while [ ! -s "$f" ]; do sleep 0.05; done;'
    )
    script = f'#!/bin/sh\ncase "$1" in --benchmark_list_tests*) {sleeper} echo BM_x;; esac\n'
    seen = user.home / "seen"
    suite = '\n[[suite]]\nadapter = "google-benchmark"\npath = "bench.sh"\nname = "gb"\n'
    check = _still_beating(f"{beats}-*", seen)
    files = {"bench.sh": script, "duet.toml": _config("true", _bench("b", check)) + suite}
    repo = _repo(user, files)
    try:
        done, _ = _duet(user, repo, "--bench", "b")
        assert done.returncode == 0, done.stdout + done.stderr
        recorded = list(user.home.glob("discovery-daemon-*"))
        assert len(recorded) == 2, f"discovery ran {len(recorded)} times: {done.stderr}"
        assert "left processes running" in done.stderr, done.stderr
        assert not seen.exists(), "discovery's daemon ran during the measurement"
        assert not _processes_naming(str(beats)), "discovery's daemon outlived duet"
    finally:
        for pid in _processes_naming(str(beats)):
            _kill(pid)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    time.sleep(0.1)


# Issue 33: each side sees only itself; root takes nothing from the invoker's environment that
# names a path.


@pytest.mark.parametrize("aim", ["root-file", "root-dir", "through-link"])
def test_root_never_opens_the_invokers_duet_lock_as_root(
    user: User, target: Target, aim: str
) -> None:
    """Issue 33, finding 1: ``DUET_LOCK`` passed through sudo (``sudo -E``, ``--preserve-env``)
    names a path of the invoking user's choosing. Aimed at a root-only file, it truncated it to
    0 bytes; aimed into a root-only directory, directly or through the user's link to it, root
    made its lock file there. Root must open it as the user: refused, with nothing made or
    changed there."""
    link = user.home / "via"
    assert user.run("ln", "-s", str(target.path.parent), str(link)).returncode == 0
    aimed = {
        "root-file": target.path,
        "root-dir": target.path.parent / "duet.lock",
        "through-link": link / "duet.lock",
    }[aim]
    repo = _repo(user, {"duet.toml": _config("true", _bench("b", "true"))})
    done, out = _duet(user, repo, env={"DUET_LOCK": str(aimed)})
    target.assert_untouched(_everything(done, out))
    assert os.listdir(target.path.parent) == [target.path.name], "root made files there"
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"cannot open the measuring lock {aimed}: Permission denied" in done.stderr
    assert f"as {user.name}, who ran sudo" in done.stderr


def test_a_duet_lock_that_is_not_duets_is_never_truncated(user: User) -> None:
    """Issue 33, finding 1: a ``DUET_LOCK`` naming a file of the user's with other content (a
    mistake) still locks, but its content stays as it was, and it stays the user's."""
    notes = user.home / "notes.txt"
    assert user.run("sh", "-c", f"echo 'my notes' > {notes}").returncode == 0
    repo = _repo(user, {"duet.toml": _config("true", _bench("b", "true"))})
    done, _ = _duet(user, repo, env={"DUET_LOCK": str(notes)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert notes.read_text() == "my notes\n", "duet wrote into a file it did not create"
    assert os.stat(notes).st_uid == user.uid
    assert "holds text duet did not write" in done.stderr


def test_root_makes_nothing_where_the_invokers_tmpdir_points(user: User, target: Target) -> None:
    """Issue 33, finding 1: ``TMPDIR`` passed through sudo names a directory of the user's
    choosing; root made its own temporary directory there (the pytest driver's, for the
    collection) even when only root may write there. It is ignored, and the user told."""
    suite = (
        'python = "interpreter.sh"\n\n[[suite]]\nadapter = "pytest-benchmark"\n'
        'path = "test_x.py"\nname = "pb"\n'
    )
    # The "interpreter" records the driver's path it is given: where root put it.
    seen = user.home / "driver"
    interpreter = f'#!/bin/sh\necho "$@" >> {seen}\n'
    files = {"interpreter.sh": interpreter, "test_x.py": "", "duet.toml": _config("true") + suite}
    repo = _repo(user, files)
    done, out = _duet(user, repo, env={"TMPDIR": str(target.path.parent)})
    target.assert_untouched(_everything(done, out))
    assert os.listdir(target.path.parent) == [target.path.name], "root left files there"
    assert seen.exists(), f"the collection never ran: {done.stdout + done.stderr}"
    assert str(target.path.parent) not in seen.read_text(), "root made its directory there"
    assert f"ignoring TMPDIR={target.path.parent} from the environment" in done.stderr


def _dead_pid() -> int:
    """A pid that can exist (at most ``pid_max``) and is not running now."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    return next(p for p in range(pid_max - 1, 300, -1) if not os.path.exists(f"/proc/{p}"))


@pytest.fixture
def sticky_dir() -> Iterator[Path]:
    """A sticky world-writable directory of the test's own, as /var/tmp and /dev/shm are (the
    real ones hold other duets' entries)."""
    path = Path("/var/tmp") / f"priv-test-{secrets.token_hex(6)}"
    path.mkdir()
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_root_removes_only_its_own_leftovers(other_user: User, sticky_dir: Path) -> None:
    """Issue 33, finding 5: root's clean-up of what an earlier duet left removed a user's
    ``/var/tmp/duet-3999999-userdata`` and ``/dev/shm/duet-3999998-userfile``, though no such
    pid can exist and root did not make them. Here in a sticky world-writable directory of the
    test's own (as /var/tmp and /dev/shm are): only root's entries in duet's exact name formats,
    with a pid that can exist and is dead, go."""
    from duet_bench.session import remove_stale_files

    shared = sticky_dir
    dead = _dead_pid()
    users = [
        "duet-3999999-userdata",  # no such pid can exist
        "duet-3999998-userfile",
        f"duet-{dead}-userfile",  # not duet's name format
        f"duet-{dead}-abcd1234",  # duet's format, but the user's directory
        f"duet-{dead}-{'ab' * 8}.barrier",  # duet's format, but not a barrier
    ]
    for name in users:
        kind = "mkdir" if name.endswith(("userdata", "abcd1234")) else "touch"
        assert other_user.run(kind, str(shared / name)).returncode == 0
    theirs = sorted(os.listdir(shared))
    ours = [f"duet-{dead}-wxyz_789", f"duet-{dead}-{'cd' * 8}.barrier"]
    (shared / ours[0]).mkdir()
    (shared / ours[1]).write_bytes(b"DUETBARR" + bytes(56))
    # A barrier handed to the sides' user (as under sudo) is duet's by its magic.
    handed = shared / f"duet-{dead}-{'ef' * 8}.barrier"
    handed.write_bytes(b"DUETBARR" + bytes(56))
    os.chown(handed, other_user.uid, other_user.gid)
    # Ours, but its duet still runs.
    alive = shared / f"duet-{os.getpid()}-live_123"
    alive.mkdir()

    removed = remove_stale_files(str(shared))

    assert sorted(removed) == sorted(str(shared / n) for n in [*ours, handed.name])
    assert sorted(os.listdir(shared)) == sorted([*theirs, alive.name])
