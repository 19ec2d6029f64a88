"""LLM-as-a-judge over an OpenAI-compatible server (`lr judge serve`, or any `--judge-url`).

The reference protocol (the authors' code, github.com/hao-ai-lab/LookaheadReasoning): a system
message; a user turn asking whether step s1 (target) and step s2 (draft) convey the same meaning -
main ideas, logic, calculation results - answered "[aligned]" or "[unaligned]" (unaligned when
too hard to decide); the assistant turn pre-filled with "[" so the first generated token is the
verdict; temperature 0, max_tokens 1; accept iff the reply contains "ali" and not "un". The judge
sees only the two steps.
The wording is a template (`--judge-prompt NAME|FILE`, lrreal/verifiers/judge_prompt.py): the
shipped `default` (this toolkit's wording, the default) or `paper` (the steps between explicit
markers), or a JSON file of the same shape; the verdict rule is the same for all.

The pre-fill uses vLLM's chat endpoint with `continue_final_message=true` and
`add_generation_prompt=false` (vLLM >= 0.6, present in 0.32): the server applies the model's own
chat template and leaves the assistant turn open after "[".

Variant `judge-logprob`: the same request with `logprobs`/`top_logprobs`; the score is
P(aligned) / (P(aligned) + P(unaligned)) over the first token's top alternatives, accepted when
>= threshold (a tunable operating point instead of the argmax).

Unlike the reference, every call has a timeout and bounded retries (timeouts, connection errors,
HTTP 429/5xx, with exponential back-off); whatever still fails is a rejection with `error` set.
The timeout is a deadline on the whole attempt (connect, send, the complete reply), not only on
the gap between bytes, so a server that trickles its reply cannot hold a verification: one
exchange takes at most (retries + 1) * timeout_s + backoff_s * (2**retries - 1). A reply without a
verdict token (neither "ali" nor "un") is a rejection with `error` ("unexpected reply"), not a
silent "unaligned". A judge that cannot answer /v1/models at start-up (`warm_up`) is a UserError:
the run stops before any model time is spent, instead of rejecting every step. A judge that
stops answering mid-run (timeouts or refused connections on every attempt) gets one attempt per
exchange, without back-off, until it answers again (see `_request`).
"""
from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass, field

from lrcore.errors import UserError

from .base import Verifier
from .judge_prompt import JudgePrompt, load_judge_prompt

# The judge client's API key comes from this environment variable (never from a flag: a key on
# the command line shows in `ps` and would be recorded in the trace's run.flags). `lr judge serve
# --api-key` defaults to it as well, so one variable configures both ends.
API_KEY_ENV = "LR_JUDGE_API_KEY"


def api_key_from_env(flag: str = API_KEY_ENV) -> str | None:
    """The key in $LR_JUDGE_API_KEY (None when unset or empty), checked to fit an HTTP header."""
    import os

    return check_api_key(os.environ.get(API_KEY_ENV) or None, flag)


def check_api_key(key: str | None, flag: str) -> str | None:
    if key is not None and not (key.isascii() and key.isprintable() and " " not in key and key):
        raise UserError(f"{flag}: an API key must be printable ASCII without spaces")
    return key


TOP_LOGPROBS = 20  # vLLM's default --max-logprobs; enough to see both verdict tokens


@dataclass
class JudgeConfig:
    url: str                       # http://host:port (with or without /v1)
    model: str | None = None       # served model name; None: the server's first model
    timeout_s: float = 30.0        # per attempt; a CPU judge answers a ~200-token prompt in seconds
    retries: int = 2               # extra attempts after the first (timeouts, 5xx, 429, connection)
    backoff_s: float = 0.5         # first retry waits this long, then doubles
    logprob_threshold: float | None = None  # set: the judge-logprob variant
    api_key: str | None = field(default=None, repr=False)  # sent as "Authorization: Bearer KEY"
    prompt: "JudgePrompt | str | None" = None  # the template (a JudgePrompt, a shipped name or a
                                               # path); None: the default template


def judge_messages(target_step: str, draft_step: str, prompt: "JudgePrompt | str | None" = None) -> list[dict]:
    """The chat messages of one comparison under `prompt` (default: the default template)."""
    return load_judge_prompt(prompt).messages(target_step, draft_step)


def reply_accepts(reply: str) -> bool:
    """The reference rule: the reply contains "ali" and not "un"."""
    r = reply.lower()
    return "ali" in r and "un" not in r


def has_verdict(reply: str) -> bool:
    """The reply names a verdict: the reference rule would accept it, or it starts "un"..."""
    r = reply.lower()
    return "ali" in r or "un" in r or _verdict_class(reply) is not None


def _verdict_class(token: str) -> str | None:
    t = token.strip().lstrip("[").lower()
    if len(t) < 2:
        return None
    if t.startswith("un") or "unaligned".startswith(t):
        return "unaligned"
    if "aligned".startswith(t) or t.startswith("align"):
        return "aligned"
    return None


def p_aligned(top_logprobs: list[dict]) -> float | None:
    """P(aligned) / (P(aligned) + P(unaligned)) over the first token's alternatives."""
    mass = {"aligned": 0.0, "unaligned": 0.0}
    for alt in top_logprobs:
        cls = _verdict_class(alt.get("token", ""))
        if cls is not None:
            mass[cls] += math.exp(alt["logprob"])
    total = mass["aligned"] + mass["unaligned"]
    return None if total == 0 else mass["aligned"] / total


class _Retryable(Exception):
    pass


class JudgeVerifier(Verifier):
    method = "judge"

    def __init__(self, config: JudgeConfig, shortcut: bool = True):
        if not config.url.startswith(("http://", "https://")):
            raise UserError(f"--judge-url {config.url!r}: expected http://HOST:PORT")
        if config.retries < 0 or config.timeout_s <= 0:
            raise UserError("judge: --judge-retries must be >= 0 and --judge-timeout > 0")
        t = config.logprob_threshold
        if t is not None and not 0.0 <= t <= 1.0:
            raise UserError(f"--verifier judge-logprob:T needs 0 <= T <= 1 (got {t})")
        self.config, self.shortcut = config, shortcut
        self.prompt = load_judge_prompt(config.prompt)  # a bad template: UserError, before any call
        self.method = "judge" if t is None else "judge-logprob"
        self.base = config.url.rstrip("/").removesuffix("/v1")
        self._client = None
        self._model: str | None = config.model
        self._unreachable = False  # the last exchange failed by timeout/connection on every attempt

    def _http(self):
        if self._client is None:
            import httpx

            headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else None
            self._client = httpx.AsyncClient(timeout=self.config.timeout_s, headers=headers)
        return self._client

    async def _request(self, method: str, path: str, payload: dict | None = None) -> dict:
        """One HTTP exchange with bounded retries; raises RuntimeError with the last reason.

        While the judge is unreachable (the previous exchange used up its attempts on timeouts
        or connection errors: it hangs or died) each exchange makes one attempt, without
        back-off: every verification still asks, so a judge that comes back is used at once,
        but a dead one costs a refused connection per step instead of the full retry budget."""
        import httpx

        tries = 1 if self._unreachable else self.config.retries + 1
        delay, reason = self.config.backoff_s, "no attempt"
        for attempt in range(tries):
            if attempt:
                await asyncio.sleep(delay)
                delay *= 2
            try:
                r = await asyncio.wait_for(self._http().request(method, self.base + path, json=payload),
                                           self.config.timeout_s)
                self._unreachable = False  # it answered, whatever it said
                if r.status_code == 429 or r.status_code >= 500:
                    raise _Retryable(f"HTTP {r.status_code}: {r.text[:200]}")
                if r.status_code >= 400:
                    raise RuntimeError(f"HTTP {r.status_code} from {path}: {r.text[:200]}")
                try:
                    return r.json()
                except ValueError:
                    raise RuntimeError(f"non-JSON reply from {path}: {r.text[:100]!r}") from None
            except (httpx.TimeoutException, asyncio.TimeoutError):
                reason = f"timed out after {self.config.timeout_s:g} s"
            except httpx.TransportError as e:
                reason = f"connection failed: {type(e).__name__}" + (f": {e}" if str(e) else "")
            except _Retryable as e:
                reason = str(e)
        note = "; judge unreachable, not retrying until it answers" if tries == 1 and self._unreachable else ""
        self._unreachable = not reason.startswith("HTTP")
        raise RuntimeError(f"{reason} ({tries} attempt{'s' if tries > 1 else ''}{note})")

    async def served_model(self) -> str:
        if self._model is None:
            data = await self._request("GET", "/v1/models")
            try:
                self._model = data["data"][0]["id"]
            except (KeyError, IndexError, TypeError):
                raise RuntimeError(f"/v1/models lists no model: {str(data)[:100]}") from None
        return self._model

    async def warm_up(self) -> None:
        try:
            await self.served_model()
        except RuntimeError as e:
            if str(e).startswith("HTTP 401"):
                raise UserError(f"--judge-url {self.base}: the judge requires an API key (HTTP 401): "
                                f"set {API_KEY_ENV} to the key it was started with (`lr judge serve "
                                f"--api-key`){'; the key sent was refused' if self.config.api_key else ''}") from None
            raise UserError(f"--judge-url {self.base}: the judge did not answer GET /v1/models ({e}); "
                            "start one with `lr judge serve` or fix the URL") from None

    def payload(self, model: str, target_step: str, draft_step: str) -> dict:
        body = {"model": model, "messages": self.prompt.messages(target_step, draft_step),
                "temperature": 0.0, "max_tokens": 1,
                "add_generation_prompt": False, "continue_final_message": True}
        if self.config.logprob_threshold is not None:
            body |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        return body

    async def _compare(self, target_step: str, draft_step: str):
        data = None
        try:
            model = await self.served_model()
            data = await self._request("POST", "/v1/chat/completions",
                                       self.payload(model, target_step, draft_step))
            choice = data["choices"][0]
            reply = choice["message"]["content"] or ""
            if not isinstance(reply, str):
                raise TypeError(f"content is {type(reply).__name__}")
            if self.config.logprob_threshold is None:
                if not has_verdict(reply):
                    return False, None, f"unexpected reply: no [aligned]/[unaligned] verdict in {reply[:50]!r}"
                return reply_accepts(reply), None, None
            top = choice["logprobs"]["content"][0]["top_logprobs"]
        except RuntimeError as e:
            return False, None, str(e)
        except (KeyError, IndexError, TypeError) as e:
            return False, None, f"unexpected reply shape ({type(e).__name__}: {e}): {str(data)[:200]}"
        score = p_aligned(top)
        if score is None:
            return False, None, f"no [aligned]/[unaligned] token among the top {len(top)} logprobs"
        return score >= self.config.logprob_threshold, score, None

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def describe(self) -> dict:
        c = self.config
        return super().describe() | {"url": self.base, "model": self._model, "timeout_s": c.timeout_s,
                                     "retries": c.retries, "logprob_threshold": c.logprob_threshold}
