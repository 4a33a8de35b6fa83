"""The jobs section: the Nova customization and evaluation jobs of the environment.

One declaration sizes the capacity (the planner), renders the recipes and launches
them. Checks that need only a job and the Nova catalog live on the models here; checks
against other sections (instance groups, plans, the region) live in checks.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, model_validator

from novapod.config.base import _at, _FieldError, _Model, _raise_all
from novapod.config.fields import INSTANCE_TYPE_PATTERN, PlanName
from novapod.config.network import LAMBDA_ENDPOINTS, MLFLOW_ENDPOINTS, RFT_ENDPOINTS
from novapod.nova.catalog import PPO_ROLE_NAMES, CatalogError, Hyperparameter, catalog

# The recipe launcher keeps the first 34 characters of a run name (and adds a random
# suffix): aws/sagemaker-hyperpod-recipes main.py, valid_run_name. A longer name would
# be cut, so two jobs could not be told apart by their runs.
JOB_NAME_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,32}[a-z0-9])?$"
# The length is checked (and reported) before the pattern: "at most 34 characters".
JobName = Annotated[str, StringConstraints(max_length=34, pattern=JOB_NAME_PATTERN)]
GroupName = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")]
# A key in the environment's data bucket, or an S3 URI of any bucket.
_S3_URI = r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/\S*)?"
S3_LOCATION = rf"^({_S3_URI}|[^/\s][^\s]*)$"


def _data_location(value: str) -> str:
    """What the pattern lets through as a key but is a mistyped URI (`s3:/bucket/x`,
    `S3://...`) or another scheme's URL (`https://...`): a job would fail on it at run
    time, after the queue and the plan's hours."""
    prefix, colon, _ = value.partition(":")
    scheme = prefix.lower() if colon else ""
    if scheme == "s3" and not re.fullmatch(_S3_URI, value):
        raise ValueError(
            f"{value} is neither a data-bucket key nor an s3:// URI; write "
            "s3://bucket/key (s3:// in lower case, then the bucket name) or a key in the "
            "data bucket such as sft/train.jsonl"
        )
    if "://" in value and scheme != "s3":
        raise ValueError(
            f"{value} is a URL, and Nova jobs read their data from S3 only; "
            "copy it into the data bucket and give its key (such as sft/train.jsonl) or "
            "an s3:// URI"
        )
    return value


S3Location = Annotated[
    str,
    StringConstraints(pattern=S3_LOCATION, max_length=1024),
    AfterValidator(_data_location),
]
LAMBDA_ARN = (
    r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]+)?$"
)
LambdaArn = Annotated[str, StringConstraints(pattern=LAMBDA_ARN)]
FROM_PATTERN = r"^(base|job:[a-z0-9]([a-z0-9-]{0,32}[a-z0-9])?|s3://\S+)$"

Model = Literal["micro", "lite", "pro", "nova-2-lite"]
Technique = Literal[
    "cpt",
    "sft-lora",
    "sft-full",
    "dpo-lora",
    "dpo-full",
    "ppo",
    "rft-lora",
    "rft-full",
    "distillation",
    "evaluation",
]
RunsOn = Literal["hyperpod", "training-job"]
Task = Literal["general-text", "multimodal", "gen-qa", "llm-judge", "rubric-judge", "rft-eval"]
Number = int | float
# Techniques whose recipe trains from data (evaluations read `evaluation.dataset`,
# distillation reads the teacher's responses).
TRAINS_FROM_DATA = frozenset(
    {"cpt", "sft-lora", "sft-full", "dpo-lora", "dpo-full", "ppo", "rft-lora", "rft-full"}
)


class JobData(_Model):
    """Where a job reads its data: keys in the data bucket or s3:// URIs."""

    train: S3Location = Field(description="Training data (JSONL): a data-bucket key or s3:// URI.")
    validation: S3Location | None = Field(
        None,
        description=(
            "Validation data, same form; optional, and only for the recipes that take it "
            "(Nova 2 Lite cpt, sft-lora, sft-full)."
        ),
    )


class Evaluation(_Model):
    """What an evaluation job measures; the model under test is the job's `from`."""

    task: Task = Field(
        description=(
            "general-text (MMLU), multimodal (MMMU; Lite, Pro, Nova 2 Lite), gen-qa (your "
            "dataset), llm-judge (Nova 1), rubric-judge (Nova 2), rft-eval (reward function)."
        )
    )
    dataset: S3Location | None = Field(
        None, description="Evaluation data (JSONL) for gen-qa, llm-judge, rubric-judge, rft-eval."
    )
    inference: dict[str, Number] = Field(
        default_factory=dict,
        description="Inference settings: max_new_tokens, top_k, top_p, temperature, top_logprobs.",
    )
    metrics_lambda_arn: LambdaArn | None = Field(
        None, description="gen-qa only: a Lambda function that computes custom metrics."
    )
    reward_lambda_arn: LambdaArn | None = Field(
        None, description="rft-eval: the reward Lambda function that scores responses."
    )


class Job(_Model):
    """A Nova job: what it trains or evaluates, how often, where, and from what."""

    model_config = ConfigDict(populate_by_name=True)

    name: JobName = Field(
        description="Run name, a DNS label of at most 34 characters; unique among jobs."
    )
    model: Model = Field(description="Nova model: micro, lite, pro or nova-2-lite.")
    technique: Technique = Field(description="Customization technique, or evaluation.")
    runs: int = Field(1, ge=1, le=1000, description="How many times the job runs (sizing).")
    hours_per_run: float | None = Field(
        None, gt=0, le=4368, description="Wall-clock hours of one run; PPO has documented hours."
    )
    runs_on: RunsOn = Field(
        "hyperpod",
        description=(
            "Where it runs: hyperpod (a restricted instance group, the default) or "
            "training-job (a SageMaker training job, on a plan or on demand)."
        ),
    )
    instance_group: GroupName | None = Field(
        None, description="The restricted instance group it runs on; its plan is the job's plan."
    )
    plan: PlanName | None = Field(
        None,
        description=(
            "Training plan: to size, for configs without a hyperpod section; for a "
            "training-job job, the plan it runs on (its target_resources include training-job)."
        ),
    )
    on_demand: bool = Field(
        False,
        description=(
            "training-job only: run on demand, without a training plan (instance types plans "
            "do not sell: g5, g6, r5)."
        ),
    )
    instance_type: str | None = Field(
        None,
        pattern=INSTANCE_TYPE_PATTERN,
        description=(
            "training-job only: the instance type; required on demand (with a plan, the "
            "plan's instance_type when it sets one)."
        ),
    )
    data: JobData | None = Field(None, description="Training and validation data.")
    from_: str | None = Field(
        None,
        alias="from",
        pattern=FROM_PATTERN,
        description=(
            "Start from: base (the model's base, default), job:<name> (that job's "
            "checkpoint; implies after), or an s3:// checkpoint URI."
        ),
    )
    after: list[JobName] = Field(
        default_factory=list, description="Jobs that must finish before this one starts."
    )
    replicas: int | None = Field(
        None,
        ge=1,
        le=64,
        description=(
            "Instances of the job (the recipe's allowed values; a training job's InstanceCount)."
        ),
    )
    hyperparameters: dict[str, Number] = Field(
        default_factory=dict,
        description="Recipe settings within the catalog's ranges (max_length, learning_rate, ...).",
    )
    mlflow: bool = Field(False, description="Log the run to the environment's MLflow server.")
    reward_lambda_arn: LambdaArn | None = Field(
        None, description="RFT: the reward Lambda function (answers within 15 minutes)."
    )
    evaluation: Evaluation | None = Field(
        None, description="Evaluation jobs: the task and its data; the model under test is from."
    )

    @property
    def on_training_job(self) -> bool:
        """It runs as a SageMaker training job, not on a HyperPod group."""
        return self.runs_on == "training-job"

    @property
    def task(self) -> str | None:
        """The evaluation task, for evaluation jobs."""
        return self.evaluation.task if self.evaluation is not None else None

    @property
    def source_job(self) -> str | None:
        """The job whose checkpoint this one starts from (`from: job:X`), if any."""
        if self.from_ and self.from_.startswith("job:"):
            return self.from_.removeprefix("job:")
        return None

    @property
    def predecessors(self) -> tuple[str, ...]:
        """Jobs that must finish first: `after` plus the `from` job, in order, once each."""
        names = list(self.after)
        if self.source_job is not None:
            names.append(self.source_job)
        return tuple(dict.fromkeys(names))

    @property
    def lambda_arns(self) -> tuple[str, ...]:
        """The Lambda functions the job's pods invoke: reward (RFT, rft-eval), metrics."""
        named = [self.reward_lambda_arn]
        if self.evaluation is not None:
            named += [self.evaluation.reward_lambda_arn, self.evaluation.metrics_lambda_arn]
        return tuple(dict.fromkeys(arn for arn in named if arn is not None))

    @property
    def endpoints(self) -> tuple[str, ...]:
        """The interface endpoints the job's pods call AWS through from a restricted group:
        Lambda for its functions, SQS too for RFT (the AWS RIG sample gives RFT both),
        MLflow's when it logs there."""
        names: list[str] = []
        if self.lambda_arns:
            names += RFT_ENDPOINTS if self.technique.startswith("rft-") else LAMBDA_ENDPOINTS
        if self.mlflow:
            names += MLFLOW_ENDPOINTS
        return tuple(dict.fromkeys(names))

    @model_validator(mode="after")
    def _catalog_rules(self) -> Job:
        _raise_all(job_problems(self))
        return self


def job_problems(job: Job) -> Iterator[_FieldError]:
    """What the catalog refuses about one job, each with its field path (relative)."""
    nova = catalog()
    try:
        variants = nova.variants_of(job.model, job.technique)
    except CatalogError as exc:
        yield _at("technique", str(exc))
        return
    display = f"{nova.models[job.model].display_name} {job.technique}"
    evaluation = job.technique == "evaluation"
    if evaluation and job.evaluation is None:
        yield _at("evaluation", "an evaluation job needs evaluation.task (and its dataset)")
    if not evaluation and job.evaluation is not None:
        yield _at("evaluation", f"only evaluation jobs take it; remove it from this {display} job")
    if job.technique in TRAINS_FROM_DATA and job.data is None:
        yield _at("data", f"{display} trains from data; set data.train to a key or s3:// URI")
    if job.data is not None and job.data.validation is not None and not variants[0].validation_data:
        # Only recipes whose run block has validation_data_s3_path read it (catalog.yaml
        # validation_data); Hydra would add the key to the others, which ignore it.
        takers = ", ".join(nova.validation_data_recipes())
        yield _at(
            "data.validation",
            f"the {display} recipe takes no validation data (only {takers} do); "
            "remove data.validation",
        )
    if job.technique.startswith("rft-") and job.reward_lambda_arn is None:
        yield _at(
            "reward_lambda_arn",
            "RFT scores its rollouts with a reward Lambda function; set its ARN",
        )
    if not job.technique.startswith("rft-") and job.reward_lambda_arn is not None:
        yield _at("reward_lambda_arn", "only RFT jobs take it (rft-eval: evaluation.*)")
    if evaluation and job.replicas not in (None, 1) and not job.on_training_job:
        yield _at("replicas", "evaluations run on exactly 1 instance on HyperPod; remove it")
    yield from _platform_problems(job, display)
    if job.technique == "ppo" and job.replicas is not None:
        roles = variants[0].roles or {}
        if job.replicas != roles.get("actor_train"):
            yield _at(
                "replicas",
                f"{display} fixes its replicas per role ({_roles(roles)}); remove replicas",
            )
    yield from _source_problems(job)
    yield from _hyperparameter_problems(job, display)
    if job.evaluation is not None and evaluation:
        yield from _evaluation_problems(job)


def _platform_problems(job: Job, display: str) -> Iterator[_FieldError]:
    """Where a job runs, about itself: a HyperPod group, or a training job on a plan or on
    demand (instance types and plans against the rest of the config: checks.py)."""
    if not job.on_training_job:
        if job.on_demand:
            yield _at(
                "on_demand",
                "only training-job jobs run on demand; set runs_on: training-job, or remove "
                "on_demand",
            )
        if job.instance_type is not None:
            yield _at(
                "instance_type",
                "a HyperPod job runs on its group's instance type; remove instance_type, or "
                "set runs_on: training-job",
            )
        return
    if job.instance_group is not None:
        yield _at(
            "instance_group",
            "a training-job job runs on no instance group; remove instance_group (plan: NAME "
            "or on_demand: true says where it runs)",
        )
    if job.plan is not None and job.on_demand:
        yield _at(
            "on_demand",
            "a training job runs on its plan or on demand, not both; remove plan or on_demand",
        )
    elif job.plan is None and not job.on_demand:
        yield _at(
            "plan",
            "a training-job job runs on a training plan whose target_resources include "
            "training-job (plan: NAME) or on demand (on_demand: true); set one of them",
        )
    nova = catalog()
    try:
        variants = nova.training_job_variants(job.model, job.technique, job.task)
    except CatalogError as exc:
        refused_task = job.task is not None and job.task in nova.training_jobs.refused
        yield _at("evaluation.task" if refused_task else "technique", f"{exc} (runs_on: hyperpod)")
        return
    if job.on_demand and job.instance_type is None:
        types = sorted({t for v in variants for t in v.instance_types})
        yield _at(
            "instance_type",
            f"an on-demand training job needs its instance type; set instance_type to one "
            f"of {', '.join(types)}",
        )
    if job.instance_type is not None:
        try:
            nova.training_job_variant(job.model, job.technique, job.instance_type, job.task)
        except CatalogError as exc:
            yield _at("instance_type", str(exc))


def _source_problems(job: Job) -> Iterator[_FieldError]:
    """What a job starts from and waits for, about itself."""
    if job.from_ and job.from_.startswith("s3://") and not re.match(r"^s3://[^/]+/\S+", job.from_):
        yield _at("from", "an s3:// checkpoint needs a bucket and a key, s3://bucket/path")
    if job.name in job.after:
        yield _at("after", f"{job.name} cannot wait for itself; remove it from after")
    if job.source_job == job.name:
        yield _at(
            "from", f"{job.name} cannot start from its own checkpoint; use base or another job"
        )


def replicas_problem(job: Job, allowed: tuple[int, ...], on: str) -> str | None:
    """Why `job.replicas` is refused on a variant allowing `allowed` (on: its types)."""
    if job.replicas is None or job.technique in ("ppo", "evaluation") or job.replicas in allowed:
        return None
    display = catalog().models[job.model].display_name
    values = ", ".join(map(str, allowed))
    return f"{display} {job.technique} on {on} runs on {values} replicas; use one of them"


def max_length_problem(
    job: Job, limit: int | None, on: str, multiple: int | None = None
) -> str | None:
    """Why hyperparameters.max_length is refused on a variant (limit: its longest;
    multiple: the step the recipe wants it in)."""
    value = job.hyperparameters.get("max_length")
    if value is None:
        return None
    display = catalog().models[job.model].display_name
    if limit is not None and value > limit:
        return (
            f"{display} {job.technique} on {on} takes sequences up to {limit} tokens, not "
            f"{_number(value)}; set max_length to {limit} or less"
        )
    if multiple is not None and value % multiple:
        below = int(value) // multiple * multiple
        choices = [n for n in (below, below + multiple) if n >= multiple and n <= (limit or n)]
        return (
            f"{display} {job.technique} on {on} takes sequence lengths in multiples of "
            f"{multiple}, not {_number(value)}; set max_length to "
            f"{' or '.join(map(str, choices))}"
        )
    return None


def batch_size_problem(job: Job, allowed: tuple[int, ...] | None, on: str) -> str | None:
    """Why hyperparameters.global_batch_size is refused on a recipe allowing `allowed`."""
    value = job.hyperparameters.get("global_batch_size")
    if value is None or allowed is None or value in allowed:
        return None
    display = catalog().models[job.model].display_name
    return (
        f"{display} {job.technique} on {on} takes a global batch size of "
        f"{', '.join(map(str, allowed))}, not {_number(value)}; use one of them"
    )


def _hyperparameter_problems(job: Job, display: str) -> Iterator[_FieldError]:
    known = catalog().hyperparameters(job.model, job.technique)
    yield from _setting_problems(
        "hyperparameters",
        job.hyperparameters,
        known,
        lambda name, choices: f"{display} has no hyperparameter {name!r}; use one of {choices}",
    )


def _setting_problems(
    where: str,
    values: Mapping[str, Number],
    known: Mapping[str, Hyperparameter],
    unknown: Callable[[str, str], str],
) -> Iterator[_FieldError]:
    """Each value at `where.<name>`: a setting the catalog knows, within its range."""
    for name, value in values.items():
        spec = known.get(name)
        if spec is None:
            yield _at(f"{where}.{name}", unknown(name, ", ".join(sorted(known)) or "none"))
            continue
        reason = spec.check(value)
        if reason is not None:
            yield _at(f"{where}.{name}", reason)


def _evaluation_problems(job: Job) -> Iterator[_FieldError]:
    assert job.evaluation is not None
    spec = job.evaluation
    nova = catalog()
    try:
        task = nova.evaluation_task(spec.task, job.model)
    except CatalogError as exc:
        yield _at("evaluation.task", str(exc))
        return
    if "dataset" in task.needs and spec.dataset is None:
        yield _at("evaluation.dataset", f"the {spec.task} evaluation reads your dataset; set it")
    if "dataset" not in task.needs and spec.dataset is not None:
        yield _at("evaluation.dataset", f"the {spec.task} benchmark brings its own data; remove it")
    if "reward_lambda_arn" in task.needs and spec.reward_lambda_arn is None:
        yield _at("evaluation.reward_lambda_arn", "rft-eval scores with your reward Lambda; set it")
    if "reward_lambda_arn" not in task.needs and spec.reward_lambda_arn is not None:
        yield _at("evaluation.reward_lambda_arn", "only the rft-eval task takes it; remove it")
    if spec.metrics_lambda_arn is not None and not task.processor:
        yield _at("evaluation.metrics_lambda_arn", "only the gen-qa task takes it; remove it")
    yield from _setting_problems(
        "evaluation.inference",
        spec.inference,
        nova.shapes["evaluation"],
        lambda _name, choices: f"unknown inference setting; use one of {choices}",
    )


def jobs_problems(jobs: list[Job]) -> Iterator[_FieldError]:
    """Checks across jobs: unique names, known predecessors, no cycles, same model."""
    names = [job.name for job in jobs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        yield _at("jobs", f"job names must be unique; repeated: {', '.join(repeated)}")
    by_name = {job.name: job for job in jobs}
    for i, job in enumerate(jobs):
        for j, name in enumerate(job.after):
            if name not in by_name:
                yield _at(f"jobs[{i}].after[{j}]", _unknown_job(name, names))
        source = job.source_job
        if source is None:
            continue
        parent = by_name.get(source)
        if parent is None:
            yield _at(f"jobs[{i}].from", _unknown_job(source, names))
        elif parent.technique == "evaluation":
            yield _at(
                f"jobs[{i}].from",
                f"{source} is an evaluation and leaves no checkpoint; start from a training job",
            )
        elif parent.technique == "distillation":
            yield _at(
                f"jobs[{i}].from",
                f"{source} is a distillation, which runs outside HyperPod and leaves no "
                "checkpoint here; start from a training job",
            )
        elif parent.runs_on != job.runs_on:
            yield _at(f"jobs[{i}].from", _crossing(source, parent, job))
        elif parent.model != job.model:
            models = catalog().models
            yield _at(
                f"jobs[{i}].from",
                f"{source} trains {models[parent.model].display_name}, not "
                f"{models[job.model].display_name}; a checkpoint continues on its own model",
            )
    cycle = _cycle(jobs)
    if cycle:
        index = names.index(cycle[0])
        yield _at(
            f"jobs[{index}].after",
            f"jobs wait for each other in a cycle ({' -> '.join([*cycle, cycle[0]])}); "
            "remove one of those dependencies",
        )


def dependency_order(jobs: list[Job]) -> list[Job]:
    """Jobs in an order where each comes after its predecessors; ties keep config order."""
    done: set[str] = set()
    order: list[Job] = []
    pending = list(jobs)
    while pending:
        ready = [job for job in pending if all(p in done for p in job.predecessors)]
        if not ready:  # a cycle: validation refuses it; keep the rest in config order
            ready = pending[:1]
        for job in ready:
            order.append(job)
            done.add(job.name)
        pending = [job for job in pending if job.name not in done]
    return order


def _cycle(jobs: list[Job]) -> list[str] | None:
    edges = {job.name: [p for p in job.predecessors if p != job.name] for job in jobs}
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(name: str, path: list[str]) -> list[str] | None:
        state[name] = 1
        for nxt in edges.get(name, []):
            if nxt not in edges:
                continue
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] if nxt in path else [nxt]
            if state.get(nxt) is None:
                found = visit(nxt, [*path, nxt])
                if found:
                    return found
        state[name] = 2
        return None

    for job in jobs:
        if state.get(job.name) is None:
            found = visit(job.name, [job.name])
            if found:
                return found
    return None


# Where each platform keeps what it trained (escrow buckets customer-escrow-<account>-hp-
# and -smtj-), and AWS's Nova SDK refuses to use either on the other platform:
# aws/nova-customization-sdk src/amzn_nova_forge/util/platform_util.py
# validate_platform_compatibility, "SMHP-trained checkpoints can only be used on SMHP.
# SMTJ-trained checkpoints can only be used on SMTJ." ("Checkpoints must be evaluated/used
# on the same platform they were trained on"): so both crossings are refused, for
# training and for evaluation alike.
_PLATFORM = {"hyperpod": "HyperPod", "training-job": "a SageMaker training job"}


def _crossing(source: str, parent: Job, job: Job) -> str:
    use = "evaluated" if job.technique == "evaluation" else "continued"
    return (
        f"{source} trains on {_PLATFORM[parent.runs_on]} and {job.name} runs on "
        f"{_PLATFORM[job.runs_on]}, but a Nova checkpoint is {use} only on the platform that "
        f"trained it; set runs_on: {parent.runs_on} on {job.name}, or start it from a job "
        f"that runs on {job.runs_on}"
    )


def _unknown_job(name: str, names: list[str]) -> str:
    return f"no job is named {name}; use one of {', '.join(names)}"


def _roles(roles: Any) -> str:
    """PPO role replicas as the user guide names the roles: critic 1, reward 1, ..."""
    return ", ".join(f"{PPO_ROLE_NAMES[role]} {count}" for role, count in roles.items())


def _number(value: Number) -> str:
    """A whole-number setting as written in a message (validation refused fractions)."""
    return str(int(value))
