"""The mutation tier (issue 32): broken duets that the suite must catch (tests/README.md,
"Mutants"). ``catalogue`` holds the hand-written mutants, ``generate`` the generated ones,
``engine`` applies a mutant to a copy of the checkout and runs the tests that should kill it."""
