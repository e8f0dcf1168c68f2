"""Commands of the ``duet`` CLI that live in their own module (registered lazily in
``duet.cli.LAZY_COMMANDS``). Each module defines one click command and imports heavy modules
inside the command's body. The shared options and error handling come from ``duet.cli``.
"""
