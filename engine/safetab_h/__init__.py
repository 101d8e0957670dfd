"""SafeTab-H: the household tables T3 (household type) and T4 (tenure) of SafeTab-P's
population groups (2020 Detailed DHC-B), one module per step: `inputs` (files and
their checks), `tabulate` (groups from the public T1, household counts, adaptivity,
noise, post-processing), `run` (the whole run, outputs and manifest), `check` (the
output check)."""
