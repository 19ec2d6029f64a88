"""`lr collect --resume` never mixes runs: the settings a trace file's records were made with
against this run's (one line naming the first flag that differs)."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from lrcore.errors import UserError
from lrcore.modes import DRAFT_MODES, SD_MODES

from .scheduler.steps import DEFAULT_STEP_STOP

if TYPE_CHECKING:
    from .collect import CollectSpec

# The run.flags that define what a record means. `--resume` appends only records made with the
# same values as every record already in the file (of any mode for the first group, of the same
# mode for the others; the judge prompt by its content, in check_resume_settings); --limit,
# --offset, --samples, --probe, --judge-url and the like may change.
RUN_FLAGS = ("dataset", "seed", "max_tokens", "max_step_tokens", "step_stop", "temperature", "top_p",
             "top_k", "target", "dtype", "max_model_len", "execute_code", "concurrency",
             "request_rate", "max_num_seqs")
DRAFT_RUN_FLAGS = ("depth", "width", "verifier", "draft", "boundary_rule", "judge_timing")
SD_RUN_FLAGS = ("num_speculative_tokens", "prompt_lookup_max")
SOLO_RUN_FLAGS = ("equal_resources",)   # of ar/sd records: the target's share of the machine
# What a flag meant in records written before the toolkit recorded it (it was fixed then).
ABSENT_MEANS = {"step_stop": list(DEFAULT_STEP_STOP), "judge_timing": "deferred",
                "concurrency": 1, "request_rate": None, "equal_resources": False,
                "max_num_seqs": 32}   # lrreal.engine.EngineArgs' default, every engine's until recorded


def flag_value(v):
    """A flag's value as JSON has it (tuples are arrays)."""
    return list(v) if isinstance(v, tuple) else v


def check_resume_settings(spec: CollectSpec, existing: list[tuple[str, dict]]) -> None:
    """Refuse `--resume` into a file whose records were made with other settings (one line
    naming the first flag that differs), so one file never mixes runs. `existing`: (mode, run)
    of every record in the file (TraceWriter.existing_runs).

    The judge prompt is compared by content (run.judge_prompt.sha256; a record without it was
    judged with the default template, the only one there was), between records of this mode
    and a run that asks an LLM judge: the same template under another path is the same run."""
    mine = {k: flag_value(v) for k, v in asdict(spec).items()}
    my_prompt = default_sha = None
    for mode, run in existing:
        run = run if isinstance(run, dict) else {}
        flags = run.get("flags") if isinstance(run.get("flags"), dict) else {}
        names = RUN_FLAGS + (DRAFT_RUN_FLAGS if mode == spec.mode and mode in DRAFT_MODES else ()) \
            + (SD_RUN_FLAGS if mode == spec.mode and mode in SD_MODES else ()) \
            + (SOLO_RUN_FLAGS if mode == spec.mode and mode not in DRAFT_MODES else ())
        for name in names:
            if name not in flags and name not in ABSENT_MEANS:
                continue      # written by an older toolkit without that flag: nothing to compare
            theirs = flags[name] if name in flags else ABSENT_MEANS[name]
            if name == "dataset" and isinstance(theirs, str) and theirs.endswith(".jsonl") \
                    and isinstance(mine[name], str) and _same_path(theirs, mine[name]):
                continue
            if flag_value(theirs) != mine[name]:
                flag = "--" + name.replace("_", "-")
                shown = lambda v: "on" if v is True else "off" if v is False else v  # noqa: E731
                raise UserError(f"--resume: {spec.out} holds {mode} records made with {flag} "
                                f"{shown(theirs)!r}; this run has {flag} {shown(mine[name])!r}: "
                                "resume with the same settings, or write to a new --out file")
        if mode == spec.mode and spec.uses_judge() and "verifier" in flags:
            # same mode and (compared above) the same judge verifier: the same template?
            from .verifiers.judge_prompt import default_prompt

            my_prompt = my_prompt or spec.judge_prompt_template()
            recorded = run.get("judge_prompt") if isinstance(run.get("judge_prompt"), dict) else {}
            theirs = recorded.get("sha256")
            if not theirs:
                default_sha = default_sha or default_prompt().sha256
                theirs = default_sha
            if theirs != my_prompt.sha256:
                name = recorded.get("name") or flags.get("judge_prompt") or "default"
                raise UserError(f"--resume: {spec.out} holds {mode} records judged with --judge-prompt "
                                f"{name!r} (sha256 {str(theirs)[:12]}); this run has --judge-prompt "
                                f"{spec.judge_prompt!r} (sha256 {my_prompt.sha256[:12]}): resume with "
                                "the same template, or write to a new --out file")


def _same_path(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b
