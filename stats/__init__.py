"""Pure statistics for duet benchmarking: numpy arrays in, numbers out.

``stats`` never imports ``duet``: thresholds and verdict words live on the ``duet`` side; these
functions return numbers (ratios, intervals, impact factors, variance components), never opinions.
"""
