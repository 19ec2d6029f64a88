"""`lr collect`: run problems through a mode on real engines and write one trace record each.

    spec = CollectSpec(mode="lr", dataset="gsm8k", limit=2, ...)
    summary = collect(spec)           # blocking; starts and always stops the vLLM engines

Records go through `lrcore.traces.TraceWriter` (append, fsync per record, resume skips completed
(problem, sample, mode) keys). Engines start only when there is work left, under the machine-wide
vLLM flock, and are shut down however the run ends.
"""
from __future__ import annotations

import asyncio
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from lrcore.errors import UserError
from lrcore.limits import MAX_NUM_SEQS
from lrcore.modes import ADAPTIVE_MODES, DRAFT_MODES, MODES, SD_MODES

from . import shutdown
from .binding import check_cores, default_binding, equal_resources_cores, hardware, preload_iomp
from .engine import EngineArgs, VllmEngine, monotonic, ngram_config, vllm_version
from .load import arrival_offsets, run_in_flight
from .lock import vllm_lock
from .resume import check_resume_settings, flag_value
from .scheduler import Problem, SchedulerConfig, run_problem
from .scheduler.steps import DEFAULT_STEP_STOP


@dataclass
class CollectSpec:
    mode: str = "lr"
    dataset: str = "gsm8k"
    limit: int | None = 2
    offset: int = 0
    samples: int = 1
    depth: int = 4
    width: int = 1
    verifier: str = "exact"
    judge_url: str | None = None
    judge_timeout_s: float = 30.0         # per attempt; a CPU judge answers one step in seconds
    judge_retries: int = 2                # extra attempts on timeouts, 5xx, 429, refused connections
    judge_prompt: str = "default"         # judge prompt template: a shipped name (default, paper) or a
                                          # JSON file (lrreal/verifiers/judge_prompt.py)
    max_tokens: int = 512
    max_step_tokens: int = 100
    step_stop: tuple = DEFAULT_STEP_STOP  # strings that end a step (--step-stop; reference "\n\n")
    boundary_rule: bool = True
    judge_timing: str = "eager"           # judge a draft once it and its parent's target step exist
                                          # (reference); "deferred": once its parent is the root
    seed: int = 0
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    out: str | None = "traces.jsonl"   # None: no trace file (engines started only to be probed)
    resume: bool = False
    target: str = "target"
    draft: str = "draft"
    cache_dir: str | None = None
    dtype: str = "float32"
    max_model_len: int = 4096
    kv_cache_space_gib: int = 2
    enable_prefix_caching: bool = True
    block_size: int = 32                  # see EngineArgs.block_size
    max_num_seqs: int = 32                # vLLM --max-num-seqs of each engine: sequences per pass
                                          # (recorded in run.flags: the profile's cap, calibrate)
    num_speculative_tokens: int = 6       # n-gram SD (repo default 6, lookup max 2)
    prompt_lookup_max: int = 2
    target_cores: str = "auto"            # VLLM_CPU_OMP_THREADS_BIND of each engine core;
    draft_cores: str = "auto"             # "auto": see default_binding()
    execute_code: bool = False
    # GPU placement (vLLM's names; docs/real-backend.md: the paper's layout as a command line)
    tensor_parallel_size: int = 1         # target engine
    draft_tensor_parallel_size: int = 1
    gpu_memory_utilization: float | None = None       # target's share of each of its GPUs
    draft_gpu_memory_utilization: float | None = None
    target_devices: str | None = None     # CUDA_VISIBLE_DEVICES of each engine, e.g. "0,1" / "2"
    draft_devices: str | None = None
    probe: bool = True                    # time a reference pass per engine around each record
                                          # (lrreal/probe.py): ~5 s alone and ~5 s side by
                                          # side on 2 cores, that make drift visible; under
                                          # load once, before the run (a probe beside other
                                          # requests would time them, not the machine)
    concurrency: int = 1                  # requests in flight on the same engines (lrreal/load.py)
    request_rate: float | None = None     # requests/s, seeded Poisson arrivals (None: closed loop)
    equal_resources: bool = False         # ar/sd: the target gets the draft's cores too
    adaptive_prior: str | None = None     # lr-adaptive: estimates file, trace file or corpus
                                          # directory its Estimator starts from (adaptive_prior.py)
    extra: dict = field(default_factory=dict)

    def validate(self) -> "CollectSpec":
        """Refuse bad flags before anything slow (data set, trace file, lock, engines)."""
        from .engine import check_dtype

        if self.mode not in MODES:
            raise UserError(f"--mode {self.mode!r}: use one of {', '.join(MODES)}")
        self.scheduler_config()
        if self.adaptive_prior is not None:
            if self.mode not in ADAPTIVE_MODES:
                raise UserError(f"--adaptive-prior applies to lr-adaptive and lr+sd-adaptive, "
                                f"not --mode {self.mode}")
            if not os.path.exists(self.adaptive_prior):
                raise UserError(f"--adaptive-prior {self.adaptive_prior}: no such file or directory")
        check_dtype(self.dtype)
        if not 1 <= self.max_num_seqs <= MAX_NUM_SEQS:
            raise UserError(f"--max-num-seqs must be in [1, {MAX_NUM_SEQS}], got {self.max_num_seqs}")
        if not (math.isfinite(self.temperature) and math.isfinite(self.judge_timeout_s)):
            raise UserError("--temperature and --judge-timeout must be finite numbers")
        for flag, cores in (("--target-cores", self.target_cores), ("--draft-cores", self.draft_cores)):
            check_cores(flag, cores)
        self.check_gpus()
        self.check_load()
        self.judge_prompt_template()  # a bad --judge-prompt is refused whatever the verifier
        if self.mode in DRAFT_MODES:
            self.make_verifier()  # parses --verifier / --judge-url; opens nothing
        self.check_out()
        if self.execute_code:  # no sandbox (util-linux, namespaces): refused before the engines
            from .sandbox import check as check_sandbox

            check_sandbox()
        return self

    def gpu_args(self) -> dict:
        """The GPU part of each engine's arguments, with the flag prefix naming its options."""
        out = {"target": (dict(tensor_parallel_size=self.tensor_parallel_size,
                               gpu_memory_utilization=self.gpu_memory_utilization,
                               devices=self.target_devices), "--", "--target-devices")}
        if self.mode in DRAFT_MODES:
            out["draft"] = (dict(tensor_parallel_size=self.draft_tensor_parallel_size,
                                 gpu_memory_utilization=self.draft_gpu_memory_utilization,
                                 devices=self.draft_devices), "--draft-", "--draft-devices")
        return out

    def check_gpus(self, gpus: int | None = None) -> None:
        """GPU flags checked like the CPU ones, before anything loads (lrreal.engine.check_gpu_layout)."""
        from .engine import EngineArgs, check_gpu_layout

        check_gpu_layout({r: (EngineArgs(model="-", **kw), pre, dev) for r, (kw, pre, dev)
                          in self.gpu_args().items()}, gpus)

    def check_load(self) -> None:
        from .load import MAX_CONCURRENCY

        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise UserError(f"--concurrency {self.concurrency}: use 1 to {MAX_CONCURRENCY}")
        if self.request_rate is not None and not (math.isfinite(self.request_rate)
                                                  and self.request_rate > 0):
            raise UserError(f"--request-rate {self.request_rate}: use a positive number of requests/s")
        if self.equal_resources and self.mode in DRAFT_MODES:
            raise UserError(f"--equal-resources: for ar and sd (the target alone on the cores "
                            f"{self.mode} splits between target and draft)")

    @property
    def under_load(self) -> bool:
        """More than one request can be in flight (per-record probes are off)."""
        return self.concurrency > 1 or self.request_rate is not None

    def check_out(self) -> None:
        """--out: not a directory or device, not under a file, writable, not the data set."""
        from lrcore.outputs import check_output

        if self.out is None:
            return
        ds = Path(self.dataset)
        check_output(self.out, "--out", inputs=[ds if ds.suffix == ".jsonl" else None],
                     what="trace file (JSONL)")

    def make_verifier(self):
        from .verifiers import make_verifier
        return make_verifier(self.verifier, judge_url=self.judge_url, seed=self.seed,
                             judge_timeout_s=self.judge_timeout_s, judge_retries=self.judge_retries,
                             judge_prompt=self.judge_prompt)

    def uses_judge(self) -> bool:
        """Does this run ask an LLM judge (so its records depend on the judge prompt)?"""
        from .verifiers import JUDGE_KINDS
        return self.mode in DRAFT_MODES and self.verifier.partition(":")[0] in JUDGE_KINDS

    def judge_prompt_template(self):
        """The --judge-prompt template, loaded and checked (a UserError naming the flag)."""
        from .verifiers import load_judge_prompt
        return load_judge_prompt(self.judge_prompt)

    def scheduler_config(self) -> SchedulerConfig:
        return SchedulerConfig(mode=self.mode, depth=self.depth, width=self.width,
                               max_tokens=self.max_tokens, max_step_tokens=self.max_step_tokens,
                               boundary_rule=self.boundary_rule, temperature=self.temperature,
                               top_p=self.top_p, top_k=self.top_k, seed=self.seed,
                               step_stop=tuple(self.step_stop), judge_timing=self.judge_timing)


def chat_prompt(tokenizer, messages: list[dict]) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def build_record(spec: CollectSpec, run_info: dict, prob, sample: int, res, grade,
                 engine_stats: dict, sd: dict | None, prompt_tokens: int) -> dict:
    rec = {
        "schema_version": 1, "run": run_info, "mode": spec.mode, "problem_id": prob.id,
        "sample": sample, "dataset": prob.dataset, "wall_time_s": res.wall_time_s,
        "output_tokens": res.output_tokens, "correct": grade.correct,
        "steps": res.steps, "engine_stats": engine_stats, "sd": sd,
        "step_acceptance": res.step_acceptance, "prompt_tokens": prompt_tokens,
        "output_text": res.text, "gold": prob.answer, "prediction": grade.prediction,
        "finish_reason": res.finish_reason, "error": None,
        "tokens_per_s": res.output_tokens / res.wall_time_s if res.wall_time_s > 0 else 0.0,
    }
    if res.extra.get("adaptive") is not None:  # lr-adaptive / lr+sd-adaptive: every decision
        rec["adaptive"] = res.extra["adaptive"]
    return rec


def record_kv_capacity(run_info: dict, engines: dict) -> None:
    """run.kv_cache_tokens: each started engine's KV cache in tokens, as vLLM reports it (what
    `lr calibrate` puts in the profile; engines that do not say, e.g. test fakes, are left out)."""
    kv = {}
    for role, e in engines.items():
        get = getattr(e, "kv_capacity_tokens", None)
        n = get() if callable(get) else None
        if n:
            kv[role] = int(n)
    if kv:
        run_info["kv_cache_tokens"] = kv
    else:
        run_info.pop("kv_cache_tokens", None)


def _model_folder(flag: str, name: str, cache_dir: str | None, check: bool = True):
    """Resolve a model and check its folder in milliseconds, before the lock and the engines
    (check=False: its name only)."""
    from . import models
    from .engine_checks import check_model_folder

    try:
        path = models.resolve(name, cache_dir, prepared=check)
        if check:
            check_model_folder(path)
    except UserError as e:
        raise UserError(f"{flag}: {e}") from None
    return path


class Collector:
    """Holds started engines; runs (problem, sample) pairs; used by `collect()` and the tests."""

    def __init__(self, spec: CollectSpec):
        from . import models

        self.spec = spec.validate()
        self.cfg = spec.scheduler_config()
        draft = spec.draft if spec.mode in DRAFT_MODES else None
        for flag, name in (("--target", spec.target), ("--draft", draft)):
            if name:      # every name first: a misspelt draft before an unprepared target
                _model_folder(flag, name, spec.cache_dir, check=False)
        self.target_path = _model_folder("--target", spec.target, spec.cache_dir)
        self.draft_path = _model_folder("--draft", draft, spec.cache_dir) if draft else None
        self.engines: dict[str, VllmEngine] = {}
        self.pool = None
        self.verifier = None
        self._tokenizer = None
        self.run_info = {
            "flags": {k: flag_value(v) for k, v in asdict(spec).items() if k != "extra"} | spec.extra,
            "models": {"target": models.model_identity(self.target_path)}
                      | ({"draft": models.model_identity(self.draft_path)} if self.draft_path else {}),
            "vllm_version": vllm_version(), "hardware": hardware(),
            "seeds": {"run_seed": spec.seed,
                      "per_request": "sha256(run_seed, problem_id, sample, node path, role)"},
        }
        if spec.execute_code:  # how the HumanEval sandbox caps memory here: cgroup or rlimits
            from .sandbox import describe as sandbox_limits

            self.run_info["sandbox"] = sandbox_limits()
        if spec.adaptive_prior is not None:
            self.cfg = self._with_prior(spec)

    def _with_prior(self, spec: CollectSpec):
        """The scheduler config with --adaptive-prior resolved for this run's bounds and models
        (lrreal/scheduler/adaptive_prior.py)."""
        from .scheduler.adaptive_prior import load_prior
        from .scheduler.lr_adaptive import adaptive_config

        k2 = spec.num_speculative_tokens + 1 if spec.mode == "lr+sd-adaptive" else 1
        models = {role: m.get("name") for role, m in self.run_info["models"].items()}
        prior, source = load_prior(spec.adaptive_prior, adaptive_config(self.cfg, k2), models)
        return replace(self.cfg, adaptive_prior=prior.to_dict() if prior else None,
                       adaptive_prior_from=source)

    def make_verifier(self):
        if self.spec.mode not in DRAFT_MODES:
            return None
        v = self.spec.make_verifier()
        self.run_info["verifier"] = v.describe()
        if getattr(v, "prompt", None) is not None:  # an LLM judge (or the score verifier's target):
            self.run_info["judge_prompt"] = v.prompt.describe()  # which template it is asked with
        self.bind_verifier(v)  # engines already started (e.g. lrreal/corpus.py): bind now
        return v

    def bind_verifier(self, v=None) -> None:
        """Give a verifier that asks the target engine (the score verifier, `bind(engine,
        render)`) this collector's target and the target's chat template. Called wherever the
        verifier and the engines meet (make_verifier, start, warm_up, run_one), so any order
        works and a verifier kept across collectors (lrreal/corpus.py) asks the current target;
        other verifiers have no `bind` and are left alone."""
        v = self.verifier if v is None else v
        bind = getattr(v, "bind", None)
        if bind is not None and "target" in self.engines:
            bind(self.engines["target"], lambda messages: chat_prompt(self.tokenizer(), messages))

    def engine_args(self) -> dict[str, EngineArgs]:
        """The engines this spec runs on, by role."""
        s = self.spec
        auto_t, auto_d = default_binding(s.mode)
        t_cores = auto_t if s.target_cores == "auto" else s.target_cores
        d_cores = auto_d if s.draft_cores == "auto" else s.draft_cores
        if s.equal_resources:  # the cores lr would give target and draft, all to the target
            t_cores = equal_resources_cores(s.target_cores, s.draft_cores)
        spec_cfg = ngram_config(s.num_speculative_tokens, s.prompt_lookup_max) if s.mode in SD_MODES else None
        common = dict(dtype=s.dtype, max_model_len=s.max_model_len,
                      kv_cache_space_gib=s.kv_cache_space_gib,
                      enable_prefix_caching=s.enable_prefix_caching, seed=s.seed,
                      block_size=s.block_size, max_num_seqs=s.max_num_seqs)
        gpu = {r: kw for r, (kw, _, _) in s.gpu_args().items()}
        # CUDA graphs on GPUs (eager mode is for CPUs, where there is no graph capture)
        eager = {r: dict(enforce_eager=not EngineArgs(model="-", **kw).uses_gpu) for r, kw in gpu.items()}
        out = {"target": EngineArgs(model=str(self.target_path), speculative_config=spec_cfg,
                                    omp_threads_bind=t_cores, **common, **gpu["target"], **eager["target"])}
        if self.draft_path is not None:
            out["draft"] = EngineArgs(model=str(self.draft_path), omp_threads_bind=d_cores, **common,
                                      **gpu["draft"], **eager["draft"])
        return out

    def start(self, pool=None) -> None:
        """Start the engines, or take them from `pool` (an EnginePool kept across specs, where
        engines with the same arguments are reused). Call inside the event loop, holding the
        vLLM lock."""
        from .engine_pool import EnginePool

        self.pool = pool if pool is not None else EnginePool()
        self.run_info["hardware"]["iomp_preload"] = preload_iomp()
        args = self.engine_args()
        self.run_info["hardware"]["cores"] = {"target": args["target"].omp_threads_bind,
                                              "draft": args["draft"].omp_threads_bind
                                              if "draft" in args else None}
        self._fresh = [r for r, a in args.items() if self.pool.args.get(r) != a]
        self.engines = {role: self.pool.get(role, a) for role, a in args.items()}
        if set(self.pool.engines) != set(self.engines):  # e.g. ar beside a loaded, idle draft
            self.run_info["engines_loaded"] = self.pool.describe()
        record_kv_capacity(self.run_info, self.engines)
        self.bind_verifier()

    async def warm_up(self) -> None:
        """One tiny request per newly started engine, so start-up costs never land in a timed
        record."""
        from .engine import GenRequest
        for name in getattr(self, "_fresh", list(self.engines)):
            e = self.engines[name]
            await e.generate(GenRequest(request_id=f"warmup-{name}", prompt="Hello", max_tokens=2))
        self._fresh = []
        if self.verifier is not None:
            self.bind_verifier()
            await self.verifier.warm_up()

    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer
            self._tokenizer = AutoTokenizer.from_pretrained(str(self.target_path))
        return self._tokenizer

    async def run_one(self, prob, sample: int, admission=None) -> dict:
        """One (problem, sample) as a trace record. `admission` (lrreal/load.py): the load it ran
        under; then per-record probes are off and the record gets a `load` object."""
        from .grading import grade
        from .probe import cpu_snapshot, machine_during

        prompt = chat_prompt(self.tokenizer(), prob.messages)
        prompt_tokens = len(self.tokenizer()(prompt)["input_ids"])
        probes = self.pool.probes if (self.spec.probe and self.pool is not None
                                      and not self.spec.under_load) else None
        t_probe = monotonic()
        before = await probes.before(self.pool.engines) if probes else None
        if probes and admission is not None:
            admission = admission.delayed(monotonic() - t_probe)
        cpu0 = cpu_snapshot() if probes or admission else None
        marks = {n: e.stats_mark() for n, e in self.engines.items()}
        self.bind_verifier()
        res = await run_problem(self.cfg, Problem(prob.id, sample, prompt), self.engines["target"],
                                self.engines.get("draft"), self.verifier)
        stats = {n: e.stats_since(marks[n], res.t0) for n, e in self.engines.items()}
        sd = self.engines["target"].sd_since(marks["target"])
        during = machine_during(cpu0, cpu_snapshot()) if cpu0 is not None else None
        after = await probes.take(self.pool.engines) if probes else None
        g = grade(prob, res.text, execute_code=self.spec.execute_code)
        rec = build_record(self.spec, self.run_info, prob, sample, res, g, stats, sd, prompt_tokens)
        if probes:
            rec["probe"] = {"before": before, "after": after}
            if during is not None:
                rec["probe"]["during"] = during
        if admission is not None:
            rec["load"] = admission.record(res.first_output, res.t0 + res.wall_time_s,
                                           res.output_tokens) | {"machine_during": during}
        return rec

    async def probe_run(self) -> None:
        """Under load: one probe of the idle engines before the run (run.probe_at_start)."""
        if self.spec.probe and self.spec.under_load and self.pool is not None \
                and getattr(self.pool, "probes", None) is not None:
            self.run_info["probe_at_start"] = await self.pool.probes.take(self.pool.engines)

    def shutdown(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
        self.engines.clear()


@dataclass
class CollectSummary:
    written: int = 0
    skipped: int = 0
    failed: list = field(default_factory=list)
    out: str = ""


def collect(spec: CollectSpec, on_record=None, on_start=None) -> CollectSummary:
    """Run the spec's problems; `on_record(rec)` after each written record (progress bars)."""
    from .datasets import load_problems, with_samples
    from lrcore.traces import TraceWriter

    spec.validate()
    summary = CollectSummary(out=spec.out)
    # SIGINT/SIGTERM raise shutdown.Interrupted: the finally blocks stop the engines; the guard
    # stops any child left over and, through its reaper, engine cores orphaned by a SIGKILL.
    with shutdown.signals_to_exceptions() as signals:
        signals.summary = summary  # carried by the Interrupted exception
        pairs = with_samples(load_problems(spec.dataset, spec.limit, spec.offset), spec.samples)
        with TraceWriter(spec.out, resume=spec.resume) as writer:
            check_resume_settings(spec, writer.existing_runs)
            done = writer.completed_keys()
            todo = [(p, s) for p, s in pairs if (p.id, s, spec.mode) not in done]
            summary.skipped = len(pairs) - len(todo)
            if on_start:
                on_start(len(pairs), summary.skipped)
            if not todo:
                return summary
            col = Collector(spec)  # resolves models (a UserError if not prepared) before the lock
            with vllm_lock(), shutdown.EngineGuard():
                asyncio.run(_collect_async(col, todo, writer, summary, on_record))
    return summary


async def _collect_async(col: Collector, todo, writer, summary: CollectSummary, on_record) -> None:
    shutdown.cancel_on_signal(asyncio.current_task())
    try:
        col.verifier = col.make_verifier()
        with shutdown.engine_start():
            col.start()
        await col.warm_up()
        await col.probe_run()
        spec = col.spec
        offsets = arrival_offsets(len(todo), spec.request_rate, spec.seed)

        def on_done(item, rec, error) -> None:
            prob, sample = item
            if error is not None:
                if isinstance(error, UserError):
                    raise error
                # one failing problem must not end the run; it is not recorded
                summary.failed.append({"problem_id": prob.id, "sample": sample,
                                       "error": f"{type(error).__name__}: {error}"})
                if len(summary.failed) >= 3 and summary.written == 0:
                    raise error  # systematic failure (e.g. engine died): stop instead of looping
                return
            with shutdown.critical():  # a signal waits until the record is on disk
                writer.write(rec)
                summary.written += 1
            if on_record:
                on_record(rec)

        # admitted = the run's start, so a closed loop of one is the old one-at-a-time run
        await run_in_flight(todo, spec.concurrency, spec.request_rate, offsets,
                            lambda item, adm: (col.run_one(*item, admission=adm) if spec.under_load
                                               else col.run_one(*item)), on_done)
    finally:
        if col.verifier is not None:
            try:
                await col.verifier.aclose()
            except Exception:
                pass
        col.shutdown()
