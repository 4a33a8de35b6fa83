"""Nova recipes and their launch commands from the config's jobs: pure functions.

`render_recipe` gives the complete recipe of a job with the upstream field names
(`run`, `training_config`, `evaluation`, `inference`, the PPO role blocks, ...);
`launch_spec` gives the HyperPod CLI call that runs it: the upstream recipe path, the
namespace, the override parameters and the label selector pinning it to its restricted
instance group. `bundle` renders every job plus one index, deterministically.

Names known only once the stacks are deployed stay placeholders in CloudFormation's
Fn::Sub form (`${DataBucket}`, `${ArtifactsBucket}`, `${ClusterName}`,
`${MlflowTrackingServerArn}`), resolved by `novapod launch` from the stacks' outputs (and
by CloudFormation when the NovaStack uploads the bundle). Values known only when a job
runs use another form, `{{checkpoint:<job>}}`: the checkpoint a finished job's
manifest.json names.

How the HyperPod CLI (aws/sagemaker-hyperpod-cli, release_v2) applies these, read in
its source and the recipes launcher (aws/sagemaker-hyperpod-recipes main.py,
launcher/nova/launchers.py): every override-parameters key is a Hydra override on the
launcher's root config, so recipe fields sit under `recipes.`; a key the recipe lacks
needs a `+` prefix (Hydra: "Could not override ... To append to your config use +"),
and a key it has must not have one: which keys each recipe has comes from the upstream
facts (novapod/data/nova_upstream.yaml, its key paths at the pinned commit); JSON null
arrives as the string "None" (never sent); the image is only ever the `container` key
(no default); the label selector is accepted only as the `--label-selector` flag in
Hydra dict syntax (values quoted, see `label_selector`), and the launcher merges it with
the instance-type and Restricted requirements.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from novapod.config.jobs import dependency_order
from novapod.nova import training_jobs as tj
from novapod.nova.catalog import CatalogError, Variant, catalog
from novapod.nova.upstream import upstream_facts

if TYPE_CHECKING:
    from novapod.config import Job, NovapodConfig

DATA_BUCKET = "${DataBucket}"
ARTIFACTS_BUCKET = "${ArtifactsBucket}"
CLUSTER_NAME = "${ClusterName}"
MLFLOW_ARN = "${MlflowTrackingServerArn}"
PLACEHOLDERS: tuple[str, ...] = (
    "DataBucket",
    "ArtifactsBucket",
    "ClusterName",
    "MlflowTrackingServerArn",
)
# A training job's deploy-time names: outputs of the storage and nova-base stacks
# (launch.STACK_OUTPUTS), which `novapod launch` resolves. Not in PLACEHOLDERS: the
# NovaStack's bundle keeps them as they are (access.sub_text escapes them).
STORAGE_KEY_ARN = "${StorageKeyArn}"
TRAINING_JOB_ROLE = "${TrainingJobRoleArn}"
TRAINING_JOB_SUBNETS = "${TrainingJobSubnets}"
TRAINING_JOB_SECURITY_GROUP = "${TrainingJobSecurityGroupId}"
TRAINING_JOB_PLACEHOLDERS: tuple[str, ...] = (
    "StorageKeyArn",
    "TrainingJobRoleArn",
    "TrainingJobSubnets",
    "TrainingJobSecurityGroupId",
)
# Values a training job's request knows only at launch: its name (from what it asks and
# the run), the recipe's content-addressed upload prefix, and the plan's ARN
# (DescribeTrainingPlan of the plan's name).
TRAINING_JOB_NAME = "{{training-job-name}}"
RECIPE_DIGEST = "{{recipe-digest}}"
MLFLOW_KEYS = ("mlflow_tracking_uri", "mlflow_experiment_name", "mlflow_run_name")
GROUP_LABEL = "sagemaker.amazonaws.com/instance-group-name"
RECIPE_KEYS = "recipes."


def checkpoint_placeholder(job: str) -> str:
    return "{{checkpoint:" + job + "}}"


def data_uri(location: str) -> str:
    """A data-bucket key or an s3:// URI, as an S3 URI."""
    return location if location.startswith("s3://") else f"s3://{DATA_BUCKET}/{location}"


def output_prefix(config: NovapodConfig) -> str:
    """The key prefix (in the artifacts bucket) below which every job writes its runs."""
    return f"nova/{config.name}/"


def output_uri(config: NovapodConfig, job: Job) -> str:
    """The job's own output prefix: the launcher adds the run's name (with a random
    suffix) below it, so one prefix per job keeps its runs apart from other jobs'."""
    return f"s3://{ARTIFACTS_BUCKET}/{output_prefix(config)}{job.name}/"


def instance_types(config: NovapodConfig) -> dict[str, str]:
    """Job -> the instance type it runs on (its group's, its plan's, or the sizing one)."""
    return {j.name: j.instance_type for j in config.capacity_plan().jobs}


def job_variant(config: NovapodConfig, job: Job, instance_type: str | None = None) -> Variant:
    """The recipe of the job on the instance type of its group (or its plan); a
    training-job job's is the catalog's training-job variant (its allowed counts are
    InstanceCount values), not the HyperPod one."""
    if instance_type is None:
        instance_type = instance_types(config).get(job.name)
    if job.on_training_job:
        return catalog().training_job_variant(job.model, job.technique, instance_type, job.task)
    return catalog().variant(job.model, job.technique, instance_type)


def render_recipe(
    config: NovapodConfig, job: Job, variant: Variant | None = None
) -> dict[str, Any]:
    """The complete recipe of a job (upstream field names), placeholders unresolved."""
    nova = catalog()
    model = nova.model(job.model)
    variant = variant or job_variant(config, job)
    body = nova.template(job.model, job.technique)
    for path, value in variant.defaults.items():
        _set(body, path, value)
    if job.evaluation is not None:
        task = nova.evaluation_task(job.evaluation.task, job.model)
        for key, value in task.inference_overrides.items():
            _set(body, f"inference.{key}", value)
    known = nova.hyperparameters(job.model, job.technique)
    for name, value in sorted(job.hyperparameters.items()):
        spec = known[name]
        _set(body, spec.path, _value(value, spec.kind, as_string=spec.as_string))
    if job.evaluation is not None:
        for name, value in sorted(job.evaluation.inference.items()):
            spec = nova.shapes["evaluation"][name]
            _set(body, spec.path, _value(value, spec.kind))
    # A recipe with its own run block (distillation: the teacher's model_type, no
    # replicas, data or output) keeps it; the job only names the run.
    fixed_run = body.pop("run", None)
    if fixed_run is not None:
        run = {"name": job.name, **fixed_run}
    else:
        run = _run(config, job, variant, model.model_type)
    recipe: dict[str, Any] = {"run": run}
    if job.evaluation is not None:
        task = nova.evaluation_task(job.evaluation.task, job.model)
        recipe["evaluation"] = dict(task.evaluation)
        inference = body.pop("inference")
        recipe["inference"] = inference
        if task.processor:
            # Nova 2's gen_qa recipe adds preset_reward_function ("do not modify"):
            # aws/sagemaker-hyperpod-recipes evaluation/nova/nova_2_0/nova_lite/
            # nova_lite_2_0_p5_48xl_gpu_bring_your_own_dataset_eval.yaml
            preset = {"preset_reward_function": ""} if model.generation == 2 else {}
            recipe["processor"] = {
                **preset,
                "lambda_arn": job.evaluation.metrics_lambda_arn or "",
                "lambda_type": "custom_metrics" if job.evaluation.metrics_lambda_arn else "rft",
                "preprocessing": {"enabled": False},
                "postprocessing": {"enabled": True},
                "aggregation": "average",
            }
        if "reward_lambda_arn" in task.needs:
            recipe["rl_env"] = {"reward_lambda_arn": job.evaluation.reward_lambda_arn}
    recipe.update(body)
    if job.on_training_job:
        _training_job_rules(recipe, variant)
    return recipe


def _training_job_rules(recipe: dict[str, Any], variant: Variant) -> None:
    """A training job's recipe, as upstream's training-job (`sm_jobs`) path leaves it.

    - data_s3_path, validation_data_s3_path and output_s3_path empty: the recipes say "Leave
      empty for Sagemaker Training job" (the evaluation recipes' data_s3_path) and "Output
      artifact path, Sagemaker Hyperpod job-specific configuration - not compatible with
      standard Sagemaker Training jobs" (every output_s3_path), and Nova 2 SFT's
      data_s3_path is "SageMaker Hyperpod (SMHP) only": the data arrive as the request's
      input channels and the outputs go to OutputDataConfig.S3OutputPath
      (aws/sagemaker-hyperpod-recipes@263199555b2e, recipes_collection/recipes/...).
    - no mlflow_* keys: upstream never sets them on training jobs (launcher/nova/
      launchers.py DONT_OVERRIDE_IN_SMTJ, and nova_recipe_template_processor.py deletes
      mlflow_* from the sm_jobs override parameters); MLflow goes in CreateTrainingJob's
      MlflowConfig instead (`training_job_request`).
    - replicas kept, as upstream keeps it (DONT_OVERRIDE_IN_SMTJ leaves the recipe's value;
      the template processor deletes replicas and instance_count from the sm_jobs override
      parameters because the count belongs to ResourceConfig), written equal to the
      InstanceCount novapod sends: the SDK takes the count from run.replicas when none is
      given and otherwise ignores it ("Using instance_count argument ... Ignoring run ->
      replicas in recipe", aws/sagemaker-python-sdk v2.257.6 src/sagemaker/pytorch/
      estimator.py _setup_for_nova_recipe), so recipe and request never disagree.
    - distillation's kms_key (required by the template parameters, nova_recipe_template_
      parameters.json nova_distill: "AWS KMS key to encrypt input/output in S3"): the
      storage key, which encrypts the data bucket the job reads and writes.
    """
    run = recipe["run"]
    for key in ("data_s3_path", "validation_data_s3_path", "output_s3_path"):
        if key in run:
            run[key] = ""
    for key in MLFLOW_KEYS:
        run.pop(key, None)
    if "replicas" in run:
        run["replicas"] = training_job_count_of(run["replicas"], variant)
    training = recipe.get("training_config")
    if isinstance(training, dict) and "kms_key" in training:
        training["kms_key"] = STORAGE_KEY_ARN


def training_job_count_of(replicas: int | None, variant: Variant) -> int:
    """A training job's InstanceCount: the job's replicas, else the variant's default."""
    return variant.instance_count(replicas)


def _run(config: NovapodConfig, job: Job, variant: Variant, model_type: str) -> dict[str, Any]:
    run: dict[str, Any] = {
        "name": job.name,
        "model_type": model_type,
        "model_name_or_path": model_source(job),
    }
    if variant.roles is not None:
        for role, count in variant.roles.items():
            run[f"{role}_replicas"] = count
    else:
        run["replicas"] = job.replicas or variant.default_replicas
    if variant.generation_replicas is not None:
        run["generation_replicas"] = variant.generation_replicas
    if variant.rollout_worker_replicas is not None:
        run["rollout_worker_replicas"] = variant.rollout_worker_replicas
    if job.reward_lambda_arn is not None:
        run["reward_lambda_arn"] = job.reward_lambda_arn
    train = job.data.train if job.data else None
    if job.evaluation is not None:
        train = job.evaluation.dataset
    run["data_s3_path"] = data_uri(train) if train else ""
    # Only recipes with the key take validation data (validation refuses it elsewhere).
    if variant.validation_data and job.data is not None and job.data.validation is not None:
        run["validation_data_s3_path"] = data_uri(job.data.validation)
    run["output_s3_path"] = output_uri(config, job)
    run["mlflow_tracking_uri"] = MLFLOW_ARN if job.mlflow else ""
    # The training recipes say of both names "Optional for MLFlow. Note: leave this field
    # non-empty" (e.g. training/nova/nova_1_0/nova_micro/CPT/nova_micro_1_0_p5x8_gpu_pretrain);
    # the evaluation recipes default them to "" without that note.
    named = job.mlflow or job.technique != "evaluation"
    run["mlflow_experiment_name"] = f"novapod-{config.name}" if named else ""
    run["mlflow_run_name"] = job.name if named else ""
    return run


def model_source(job: Job) -> str:
    """What the job starts from: the base model, a job's checkpoint, or an S3 URI."""
    if job.source_job is not None:
        return checkpoint_placeholder(job.source_job)
    if job.from_ and job.from_.startswith("s3://"):
        return job.from_
    return catalog().model(job.model).base


def label_selector(group: str) -> str:
    """The `--label-selector` value pinning a job to its restricted group, with the group
    name quoted so it stays a string all the way to the node affinity.

    The HyperPod CLI passes the flag on as the Hydra override `+cluster.label_selector=<it>`
    (aws/sagemaker-hyperpod-cli@abcdc77b src/hyperpod_cli/commands/job.py,
    start_training_job). Hydra's override grammar reads an unquoted element by its look:
    `1e5` a float, `123` an int, `true` a bool, `null` None (hydra-core 1.3.2, the version
    aws/sagemaker-hyperpod-recipes@263199555b2e requirements.txt pins). The Nova launcher
    merges the dict into the chart's values and writes them with OmegaConf.save
    (launcher/nova/launchers.py _get_label_selectors, _write_value_template), and the
    chart renders each value with `quote` into the nodeAffinity `In` list
    (launcher/nova/k8s_templates/SFT/training.yaml): a float prints as "100000", not the
    node label "1e5", so the pods never schedule. A quoted Hydra string stays a string,
    and OmegaConf's YAML writer quotes it again where YAML would read it otherwise
    ('1e5'). Group names are DNS labels (config/jobs.py GroupName): no quote inside."""
    return f"{{required: {{{GROUP_LABEL}: ['{group}']}}}}"


def launch_spec(
    config: NovapodConfig, job: Job, instance_type: str | None = None
) -> dict[str, Any]:
    """The HyperPod CLI call that runs the job, with its overrides (placeholders unresolved).

    Raises CatalogError when the job cannot run on HyperPod (no image in the region,
    distillation)."""
    nova = catalog()
    if instance_type is None:
        instance_type = instance_types(config)[job.name]
    variant = job_variant(config, job, instance_type)
    recipe = render_recipe(config, job, variant)
    task = job.evaluation.task if job.evaluation is not None else None
    image = nova.image(job.model, job.technique, config.region, task)
    namespace = config.nova_settings.namespace
    path = variant.recipe.replace("{suffix}", _suffix(job))
    overrides = new_keys_marked(_overrides(job, instance_type, recipe, image), path)
    start = [
        "hyperpod", "start-job", "--namespace", namespace, "--recipe", path,
        "--override-parameters", json.dumps(overrides, sort_keys=True, separators=(",", ":")),
    ]  # fmt: skip
    selector = None
    if job.instance_group is not None:
        # Pin the job to its own restricted group: a cluster may have several groups of
        # one instance type (each on its own plan), and the launcher only adds the
        # type and the Restricted label by itself.
        selector = label_selector(job.instance_group)
        start += ["--label-selector", selector]
    connect = [
        "hyperpod", "connect-cluster", "--cluster-name", CLUSTER_NAME,
        "--region", config.region, "--namespace", namespace,
    ]  # fmt: skip
    return {
        "job": job.name,
        "recipe": path,
        "namespace": namespace,
        "instance_group": job.instance_group,
        "instance_type": instance_type,
        "region": config.region,
        "after": list(job.predecessors),
        "override_parameters": overrides,
        "label_selector": selector,
        "commands": [connect, start],
    }


def _overrides(
    job: Job, instance_type: str, recipe: Mapping[str, Any], image: str
) -> dict[str, Any]:
    run = recipe["run"]
    out: dict[str, Any] = {"container": image, "instance_type": instance_type}
    # validation_data_s3_path is rendered only for recipes that have the key (no `+`).
    keys = ("name", "model_name_or_path", "data_s3_path", "validation_data_s3_path")
    for key in (*keys, "output_s3_path"):
        if run.get(key):
            out[f"recipes.run.{key}"] = run[key]
    if "replicas" in run and job.technique != "evaluation":
        out["recipes.run.replicas"] = run["replicas"]
    if job.reward_lambda_arn:
        out["recipes.run.reward_lambda_arn"] = job.reward_lambda_arn
    if job.mlflow:
        for key in ("mlflow_tracking_uri", "mlflow_experiment_name", "mlflow_run_name"):
            out[f"recipes.run.{key}"] = run[key]
    known = catalog().hyperparameters(job.model, job.technique)
    for name, value in job.hyperparameters.items():
        spec = known[name]
        out[f"recipes.{spec.path}"] = _value(value, spec.kind, as_string=spec.as_string)
    if job.evaluation is not None:
        inference = catalog().shapes["evaluation"]
        for name, value in job.evaluation.inference.items():
            out[f"recipes.{inference[name].path}"] = _value(value, inference[name].kind)
        if job.evaluation.metrics_lambda_arn:
            out["recipes.processor.lambda_arn"] = job.evaluation.metrics_lambda_arn
            out["recipes.processor.lambda_type"] = "custom_metrics"
        if job.evaluation.reward_lambda_arn:
            out["recipes.rl_env.reward_lambda_arn"] = job.evaluation.reward_lambda_arn
    return dict(sorted(out.items()))


def new_keys_marked(overrides: Mapping[str, Any], recipe: str) -> dict[str, Any]:
    """The overrides with `+` before each recipe key the upstream recipe does not have
    (Nova 1 llm_judge has no inference.max_new_tokens), so Hydra adds it instead of
    refusing the override."""
    keys = upstream_facts().recipe(recipe).keys
    marked = {
        f"+{key}"
        if key.startswith(RECIPE_KEYS) and key[len(RECIPE_KEYS) :] not in keys
        else key: value
        for key, value in overrides.items()
    }
    return dict(sorted(marked.items()))


def _suffix(job: Job) -> str:
    if job.evaluation is None:
        return ""
    return catalog().evaluation_task(job.evaluation.task).recipe_suffix


def _value(value: float, kind: str, *, as_string: bool = False) -> Any:
    typed: Any = int(value) if kind == "int" else float(value)
    return str(typed) if as_string else typed


def _set(body: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path; None removes the key (a field a task's recipe does not have)."""
    *parents, last = path.split(".")
    node = body
    for key in parents:
        node = node.setdefault(key, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = copy.deepcopy(value)


def recipe_yaml(recipe: Mapping[str, Any]) -> str:
    """A recipe as YAML, key order kept (run first, as upstream writes them)."""
    return yaml.safe_dump(dict(recipe), sort_keys=False, default_flow_style=False, width=100)


def plan_placeholder(plan: str) -> str:
    """A training plan's ARN, known at launch (DescribeTrainingPlan of its name)."""
    return "{{training-plan:" + plan + "}}"


# S3 data types of the training data channel: Converse for SFT and DPO, S3Prefix for RFT,
# as the SDK sends them (aws/sagemaker-python-sdk sagemaker-train base_trainer.py
# `use_converse = is_nova and customization_technique not in ("RLVR", "RLAIF")`); AWS's
# Nova SDK sends evaluation data as S3Prefix on the channel `train`
# (aws/nova-customization-sdk model/nova_model_customizer.py).
CONVERSE_TECHNIQUES = frozenset({"sft-lora", "sft-full", "dpo-lora", "dpo-full"})
# StoppingCondition when the job states no hours: "The default value is 1 day"
# (botocore's MaxRuntimeInSeconds documentation).
DEFAULT_RUNTIME_SECONDS = 24 * 3600


def recipe_uri() -> str:
    """The S3 prefix of a rendered recipe once uploaded: content-addressed (the digest
    of the bytes uploaded, `launch.recipe_digest`) below RECIPE_UPLOAD_PREFIX."""
    return f"s3://{DATA_BUCKET}/{tj.RECIPE_UPLOAD_PREFIX}{RECIPE_DIGEST}/"


def training_job_spec(
    config: NovapodConfig, job: Job, recipe: Mapping[str, Any]
) -> tj.TrainingJobSpec:
    """The CreateTrainingJob of a training-job job, placeholders unresolved (the run is
    the first; `novapod launch` numbers them)."""
    instance_type = instance_types(config)[job.name]
    variant = job_variant(config, job, instance_type)
    run = recipe["run"]
    hyperparameters: dict[str, Any] = {"model_type": run["model_type"]}
    source = run.get("model_name_or_path") or ""
    if source.startswith(("s3://", "{{checkpoint:")):
        hyperparameters["base_model_location"] = source
    elif source:
        hyperparameters["base_model"] = source
    training = recipe.get("training_config") or {}
    if training.get("distillation_data"):
        hyperparameters["distillation_data"] = training["distillation_data"]
        hyperparameters["role_arn"] = TRAINING_JOB_ROLE
        hyperparameters["kms_key"] = training["kms_key"]
    lambda_arn = (recipe.get("processor") or {}).get("lambda_arn")
    if recipe.get("evaluation") and lambda_arn:
        hyperparameters["eval_lambda_arn"] = lambda_arn
    if run.get("reward_lambda_arn"):
        hyperparameters["reward_lambda_arn"] = run["reward_lambda_arn"]
    channels: list[tj.Channel] = []
    if job.evaluation is not None:
        if job.evaluation.dataset is not None:
            channels.append(tj.Channel("train", data_uri(job.evaluation.dataset)))
    elif job.data is not None:
        kind = "Converse" if job.technique in CONVERSE_TECHNIQUES else "S3Prefix"
        channels.append(tj.Channel("train", data_uri(job.data.train), kind))
        if job.data.validation is not None:
            channels.append(tj.Channel("validation", data_uri(job.data.validation), kind))
    hours = job.hours_per_run or variant.hours_per_run
    mlflow = None
    if job.mlflow:
        mlflow = {
            "MlflowResourceArn": MLFLOW_ARN,
            "MlflowExperimentName": f"novapod-{config.name}",
            "MlflowRunName": job.name,
        }
    return tj.TrainingJobSpec(
        prefix=config.prefix,
        job=job.name,
        run=1,
        image=catalog().training_job_image(job.model, job.technique, config.region, job.task),
        role_arn=TRAINING_JOB_ROLE,
        instance_type=instance_type,
        instance_count=training_job_count_of(job.replicas, variant),
        recipe_uri=recipe_uri(),
        output_uri=output_uri(config, job),
        kms_key_arn=STORAGE_KEY_ARN,
        subnets=(TRAINING_JOB_SUBNETS,),
        security_groups=(TRAINING_JOB_SECURITY_GROUP,),
        max_runtime_seconds=math.ceil(hours * 3600) if hours else DEFAULT_RUNTIME_SECONDS,
        hyperparameters=hyperparameters,
        channels=tuple(channels),
        plan_arn=None if job.on_demand or job.plan is None else plan_placeholder(job.plan),
        volume_kms_key_arn=STORAGE_KEY_ARN if tj.takes_volume_key(instance_type) else None,
        volume_gb=tj.DEFAULT_VOLUME_GB if tj.takes_volume_key(instance_type) else None,
        compress_output=compresses_output(job),
        tags=config.resource_tags,
        mlflow=mlflow,
    )


def compresses_output(job: Job) -> bool:
    """Whether a training-job job's OutputDataConfig.CompressionType is GZIP (True) or
    NONE: evaluations uncompressed, so their results are objects `novapod results`
    lists (CompressionType NONE, as the SDK's evaluation pipelines send it); the others
    GZIP, SageMaker's default, whose output.tar.gz holds the manifest."""
    return job.evaluation is None


def training_job_launch(
    config: NovapodConfig, job: Job, recipe: Mapping[str, Any]
) -> dict[str, Any]:
    """The launch file of a training-job job: the CreateTrainingJob request with its
    placeholders, and what `novapod launch` resolves them from."""
    spec = training_job_spec(config, job, recipe)
    try:
        request = {"TrainingJobName": TRAINING_JOB_NAME, **tj.request_body(spec)}
    except tj.TrainingJobError as error:
        raise CatalogError(str(error)) from None
    names = config.purchase_names()
    plan = None if job.on_demand else job.plan
    return {
        "job": job.name,
        "runs_on": "training-job",
        "region": config.region,
        "after": list(job.predecessors),
        "runs": job.runs,
        "plan": plan,
        "training_plan_name": None if plan is None else sagemaker_plan_name(config, plan, names),
        "on_demand": plan is None,
        "recipe_upload": f"{recipe_uri()}{tj.RECIPE_FILE}",
        "name": f"{tj.job_stem(config.prefix, job.name)}-<run>",
        "create_training_job": request,
    }


def sagemaker_plan_name(config: NovapodConfig, plan: str, names: Mapping[str, str]) -> str:
    """The name a plan has in SageMaker: the adopted plan's (from its ARN), or the
    deterministic name it is bought under."""
    for spec in config.capacity.training_plans:
        if spec.name == plan and spec.existing_arn is not None:
            return spec.existing_arn.rsplit("/", 1)[-1]
    return names[plan]


def locations(config: NovapodConfig, job: Job) -> dict[str, str]:
    """Where a job's results land (the launcher names each run `<job>-<5 random>`; a
    training job's run folder is its TrainingJobName)."""
    output = output_uri(config, job)
    if job.on_training_job:
        # SageMaker writes <S3OutputPath>/<TrainingJobName>/output/output.tar.gz (the
        # manifest.json at its root: nova-iterative-training.html); an evaluation with
        # CompressionType NONE leaves its files loose below <name>/output/output/
        # (model-customize-evaluation-metrics-formats.html:
        # s3://<loc>/<training-job-name>/output/output/<evaluation-job-name>/eval_results/).
        # TensorBoard logs: <name>/output/tensorboard_results/ (AWS's Nova SDK reads them
        # there: aws/nova-customization-sdk model/result/eval_result.py).
        places = {"output": output}
        if job.evaluation is None:
            places["manifest"] = f"{output}<TrainingJobName>/output/output.tar.gz"
        places["tensorboard"] = f"{output}<TrainingJobName>/output/tensorboard_results/"
        if job.evaluation is not None:
            places["evaluation_results"] = (
                f"{output}<TrainingJobName>/output/output/<run>/eval_results/"
                "results_<timestamp>.json"
            )
        return places
    places = {
        "output": output,
        "manifest": f"{output}<run>/manifest.json",
        "tensorboard": f"{output}<run>/",
    }
    if job.evaluation is not None:
        places["evaluation_results"] = f"{output}<run>/eval-result/results_<timestamp>.json"
    return places


def bundle(config: NovapodConfig) -> dict[str, str]:
    """Every job's recipe and launch spec, and the index: relative path -> text.

    Deterministic: the same config gives the same bytes (sorted JSON, fixed key order,
    jobs in dependency order, ties in config order)."""
    types = instance_types(config)
    files: dict[str, str] = {}
    index: list[dict[str, Any]] = []
    for job in dependency_order(list(config.jobs)):
        variant = job_variant(config, job, types[job.name])
        recipe = render_recipe(config, job, variant)
        files[f"recipes/{job.name}.yaml"] = recipe_yaml(recipe)
        entry: dict[str, Any] = {
            "job": job.name,
            "model": job.model,
            "technique": job.technique,
            "instance_group": job.instance_group,
            "instance_type": types[job.name],
            "after": list(job.predecessors),
            "recipe": f"recipes/{job.name}.yaml",
            **locations(config, job),
        }
        why_not = catalog().techniques[job.technique].not_launchable
        if job.on_training_job:
            document = training_job_launch(config, job, recipe)
            files[f"launch/{job.name}.json"] = _json(document)
            entry["runs_on"] = "training-job"
            entry["launch"] = f"launch/{job.name}.json"
            for key in ("plan", "training_plan_name", "on_demand", "name"):
                entry[key] = document[key]
            entry["recipe_upload"] = document["recipe_upload"]
        elif why_not is None:
            spec = launch_spec(config, job, types[job.name])
            files[f"launch/{job.name}.json"] = _json(spec)
            entry["launch"] = f"launch/{job.name}.json"
            entry["commands"] = spec["commands"]
        else:
            entry["launch"] = None
            entry["not_launchable"] = why_not
        index.append(entry)
    files["index.json"] = _json(
        {
            "environment": config.name,
            "region": config.region,
            "catalog": catalog().source,
            "placeholders": list(PLACEHOLDERS),
            "jobs": index,
            # Only with training-job jobs, so other configs' index stays as it was.
            **(
                {"training_job_placeholders": list(TRAINING_JOB_PLACEHOLDERS)}
                if any(job.on_training_job for job in config.jobs)
                else {}
            ),
        }
    )
    return dict(sorted(files.items()))


def _json(document: Any) -> str:
    return json.dumps(document, indent=2, sort_keys=True) + "\n"
