"""The ``duet`` command line (placeholder until the commands land)."""

import click

from duet import __version__


@click.group()
@click.version_option(__version__, prog_name="duet")
def main() -> None:
    """duet: A/B performance regression testing for CI."""
