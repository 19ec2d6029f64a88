"""Capacity planning: the paper's setups as presets, what-if sweeps ranked by speedup or goodput
under an SLO (always against the equal-resources baseline), local or Ray parallelism, `lr plan`.

    presets.py   the paper's setups from published facts (profile-like: to_config)
    table1.py    preset predictions side by side with the paper's Table 1
    planner.py   candidates x hardware x load -> ranked table, recommendation
    parallel.py  local process pool or Ray tasks
    cli.py       `lr plan`
"""
