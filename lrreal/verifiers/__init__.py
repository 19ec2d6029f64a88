"""Step verifiers: `await verifier.verify(target_step, draft_step) -> Verdict`.

`make_verifier("judge", judge_url=...)` builds one from the CLI's `--verifier` spec:

  exact                 whitespace/case-insensitive string equality
  embedding[:T]         MiniLM cosine >= T (default 0.9)
  random[:P]            accept with probability P (default 0.5), seeded, for ablations
  judge                 LLM judge, "[aligned]"/"[unaligned]" protocol (needs --judge-url)
  judge-logprob[:T]     LLM judge, accept when P(aligned) >= T (default 0.5)
  score[:T]             the target model scores the drafted step 0-9 in one token, accept when
                        score >= T (default 7; SpecReason-style, see score.py); needs the target
                        engine: `lr collect` binds it (`ScoreVerifier.bind(engine, render)`)

Every verifier except `exact` first tries the exact-match shortcut (`--no-shortcut` disables).
The LLM judges ask with a prompt template (`judge_prompt=`: a shipped name, `default` or `paper`,
a file path, or a JudgePrompt; see judge_prompt.py); the score verifier's prompt is fixed
(score.SCORE_PROMPT).
"""
from __future__ import annotations

from lrcore.errors import UserError

from .base import Verdict, Verifier, exact_match, normalize
from .embedding import EmbeddingVerifier
from .exact import ExactVerifier
from .judge import JudgeConfig, JudgeVerifier
from .judge_prompt import JudgePrompt, load_judge_prompt
from .randomized import RandomVerifier
from .score import SCORE_PROMPT, ScoreVerifier
from .score import DEFAULT_THRESHOLD as DEFAULT_SCORE_THRESHOLD

__all__ = ["Verdict", "Verifier", "ExactVerifier", "EmbeddingVerifier", "RandomVerifier",
           "JudgeVerifier", "JudgeConfig", "JudgePrompt", "load_judge_prompt", "make_verifier",
           "ScoreVerifier", "SCORE_PROMPT", "exact_match", "normalize", "KINDS", "JUDGE_KINDS"]

KINDS = ("exact", "embedding", "random", "judge", "judge-logprob", "score")
JUDGE_KINDS = ("judge", "judge-logprob")  # the verifiers that send a judge prompt (--judge-prompt)


def make_verifier(spec: str, *, judge_url: str | None = None, judge_model: str | None = None,
                  judge_timeout_s: float = 30.0, judge_retries: int = 2, judge_backoff_s: float = 0.5,
                  seed: int = 0, shortcut: bool = True,
                  judge_prompt: "str | JudgePrompt | None" = None) -> Verifier:
    kind, _, arg = spec.partition(":")
    value = None
    if arg:
        try:
            value = float(arg)
        except ValueError:
            raise UserError(f"--verifier {spec!r}: {arg!r} is not a number") from None
    if kind not in KINDS:
        raise UserError(f"--verifier {spec!r}: unknown verifier; use one of {', '.join(KINDS)} "
                        "(e.g. embedding:0.9, random:0.5, judge-logprob:0.5, score:7)")
    if kind == "exact":
        if arg:
            raise UserError(f"--verifier {spec!r}: exact takes no parameter")
        return ExactVerifier()
    if kind == "score":
        # asks the target engine, not --judge-url; unbound until lr collect starts the engines
        if value is not None and not (value.is_integer() and 0 <= value <= 9):
            raise UserError(f"--verifier {spec!r}: score:T needs a whole number T from 0 to 9 "
                            f"(the lowest score accepted; default {DEFAULT_SCORE_THRESHOLD})")
        return ScoreVerifier(DEFAULT_SCORE_THRESHOLD if value is None else int(value),
                             shortcut=shortcut)
    if kind == "embedding":
        return EmbeddingVerifier(**({} if value is None else {"threshold": value}), shortcut=shortcut)
    if kind == "random":
        return RandomVerifier(0.5 if value is None else value, seed=seed, shortcut=shortcut)
    if not judge_url:
        raise UserError(f"--verifier {kind} needs --judge-url (start one with `lr judge serve`)")
    if kind == "judge" and arg:
        raise UserError(f"--verifier {spec!r}: judge takes no parameter (use judge-logprob:T)")
    threshold = None if kind == "judge" else (0.5 if value is None else value)
    from .judge import api_key_from_env

    return JudgeVerifier(JudgeConfig(judge_url, judge_model, judge_timeout_s, judge_retries,
                                     judge_backoff_s, logprob_threshold=threshold,
                                     api_key=api_key_from_env(), prompt=judge_prompt),
                         shortcut=shortcut)
