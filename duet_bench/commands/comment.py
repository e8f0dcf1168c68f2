"""``duet comment``: create or update the single duet comment on a pull or merge request."""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING

import click

from duet_bench.ci import NotPosted, Provider, build_body, github, gitlab, upsert, validate_key
from duet_bench.ci.github import escape_data, escape_property
from duet_bench.commands import raise_if_incomplete
from duet_bench.commands.finish import color_for
from duet_bench.commands.help import Command
from duet_bench.commands.options import allow_incomplete_option
from duet_bench.errors import UsageError
from duet_bench.results import load_given

if TYPE_CHECKING:
    from duet_bench.results import ResultsDocument

_SHA = re.compile(r"[0-9a-fA-F]{7,64}")


def _key(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    try:
        return validate_key(value)
    except UsageError as e:
        raise click.BadParameter(e.message) from None


def _sha(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not _SHA.fullmatch(value):
        raise click.BadParameter(f"{value!r} is not a commit id (7 to 64 hex digits)")
    return value


def _detect(provider: str | None) -> str | None:
    if provider:
        return provider
    if os.environ.get("GITHUB_ACTIONS") == "true":
        return "github"
    if os.environ.get("GITLAB_CI") == "true":
        return "gitlab"
    return None


@click.command(
    cls=Command,
    exits={
        0: "posted, or nothing to post (a warning says why; see --require-comment)",
        1: "",
        3: "nothing posted with --require-comment, or the results are unreadable or "
        "incomplete (see --allow-incomplete)",
    },
    interrupts=False,
)
@click.argument("results", type=click.Path(path_type=str))
@click.option(
    "--provider",
    type=click.Choice(["github", "gitlab"]),
    default=None,
    help="Where to post; default: detected from GITHUB_ACTIONS or GITLAB_CI.",
)
@click.option(
    "--pr",
    type=click.IntRange(1),
    default=None,
    metavar="N",
    help="Pull request number (GitHub) or merge request IID (GitLab); default: from the CI "
    "event (GITHUB_EVENT_PATH, CI_MERGE_REQUEST_IID).",
)
@click.option(
    "--key",
    default="default",
    show_default=True,
    callback=_key,
    help="Which duet comment to create or update: one comment per key (e.g. one per suite).",
)
@click.option(
    "--details-url",
    metavar="URL",
    help="Where the full results are, linked from the comment; default: this CI run or job.",
)
@click.option(
    "--expect-head-sha",
    metavar="SHA",
    callback=_sha,
    help="Post only if the pull/merge request's head is still this commit (the workflow_run "
    "pattern: results of an older push are not posted).",
)
@click.option(
    "--author",
    metavar="LOGIN",
    help="GitHub login the token writes as, when GET /user cannot tell; default "
    "github-actions[bot] (the Actions GITHUB_TOKEN).",
)
@click.option(
    "--require-comment",
    is_flag=True,
    help="Exit 3 when nothing could be posted (no pull request, no token, no permission as "
    "on a fork's pull request) instead of printing a warning and exiting 0.",
)
@click.option(
    "--dry-run", is_flag=True, help="Print the comment and where it would go; send nothing."
)
@allow_incomplete_option
def comment(
    results: str,
    provider: str | None,
    pr: int | None,
    key: str,
    details_url: str | None,
    expect_head_sha: str | None,
    author: str | None,
    require_comment: bool,
    dry_run: bool,
    allow_incomplete: bool,
) -> None:
    """Create or update the duet comment on a GitHub pull request or GitLab merge request.

    One comment per KEY: its first line is a hidden marker, and only a comment with that
    marker written by the same identity is ever updated (the newest one); otherwise a new
    comment is made. Tokens: GITHUB_TOKEN on GitHub (the job's token, permission
    pull-requests: write), DUET_GITLAB_TOKEN on GitLab (a project access token with the api
    scope; CI_JOB_TOKEN cannot write notes). The API URL comes from GITHUB_API_URL or
    CI_API_V4_URL, so GitHub Enterprise and self-managed GitLab work.

    A missing pull request, token or permission (a fork's pull request gets a read-only
    token) is a warning with the fix, and the exit code stays 0 unless --require-comment.
    Incomplete results (an interrupted run) are posted saying so, then exit 3 unless
    --allow-incomplete.

    \b
    Examples:
      duet comment duet-results/results.json
      duet comment results.json --provider github --pr 12 --dry-run
    """
    doc = load_given(results)
    _post(doc, provider, pr, key, details_url, expect_head_sha, author, require_comment, dry_run)
    raise_if_incomplete(doc, allow=allow_incomplete)


def _post(
    doc: ResultsDocument,
    provider: str | None,
    pr: int | None,
    key: str,
    details_url: str | None,
    expect_head_sha: str | None,
    author: str | None,
    require_comment: bool,
    dry_run: bool,
) -> None:
    """Post (or with ``dry_run`` print) the comment of ``doc``."""
    where = _detect(provider)
    poster: Provider
    try:
        if where is None:
            raise NotPosted(
                "not running in GitHub Actions or GitLab CI: no pull request to comment on",
                fix="give --provider github or --provider gitlab with the CI variables set",
            )
        if where == "github":
            gh = github.target_from_env(os.environ, pr=pr)
            url = details_url or gh.details_url
            body = build_body(doc, key=key, max_length=github.GitHub.max_body, details_url=url)
            if dry_run:
                _dry_run(body, f"pull request {gh.repo}#{gh.number} ({gh.api_url})", key)
                return
            poster = github.GitHub.from_target(gh, author=author)
        else:
            gl = gitlab.target_from_env(os.environ, mr=pr)
            url = details_url or gl.details_url
            body = build_body(doc, key=key, max_length=gitlab.GitLab.max_body, details_url=url)
            if dry_run:
                _dry_run(body, f"merge request !{gl.iid} of project {gl.project}", key)
                return
            poster = gitlab.GitLab.from_target(gl)
        outcome = upsert(poster, body, key=key, expect_head_sha=expect_head_sha)
    except NotPosted as e:
        if dry_run:
            click.echo(build_body(doc, key=key, details_url=details_url), nl=False)
            click.echo(f"duet: dry run: would post nowhere: {e.message}", err=True)
            return
        if require_comment:
            raise
        _warn(e.message, e.fix)
        return
    shown = f" {outcome.comment.url}" if outcome.comment.url else ""
    click.echo(
        f"duet: {outcome.action} the duet comment (key {key}, id {outcome.comment.id}) on "
        f"{poster.noun} {poster.where}{shown}",
        err=True,
    )


def _dry_run(body: str, place: str, key: str) -> None:
    click.echo(body, nl=False)
    click.echo(
        f"duet: dry run: would create or update the duet comment (key {key}) on {place}", err=True
    )


def _warn(message: str, fix: str | None) -> None:
    click.secho(
        f"duet: warning: nothing posted: {message}",
        fg="yellow" if color_for(sys.stderr) else None,
        err=True,
    )
    if fix:
        click.echo(f"  fix: {fix}", err=True)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        text = f"nothing posted: {message}" + (f" Fix: {fix}" if fix else "")
        click.echo(f"::warning title={escape_property('duet comment')}::{escape_data(text)}")
