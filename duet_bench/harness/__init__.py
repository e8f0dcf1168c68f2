"""Files that run inside the measured environment (standard library only, or a C header).

They are executed by path with the version's own interpreter and never import ``duet_bench`` or
``duet_stats``; the runner imports ``duet_barrier`` from here to create and watch the barrier.
"""
