"""Capacity planning: the paper's setups as presets, what-if sweeps ranked by speedup or goodput
under an SLO (always against the equal-resources baseline), local or Ray parallelism, `lr plan`
(docs/planning.md).

    presets.py   the paper's setups from published facts (profile-like: to_config)
    table1.py    preset predictions side by side with the paper's Table 1
    sources.py   preset | calibrated profile | scenario -> Config factory (picklable)
    hardware.py  what-ifs on a Config: device kind, shared placement, equal resources
    space.py     what a plan searches: candidates, load, hardware
    planner.py   candidates x hardware x load -> simulated seed blocks -> ranked rows
    rows.py      a row from a candidate's blocks, paired speedups, the recommendation
    parallel.py  local process pool or Ray tasks
    cli.py       `lr plan`
"""
