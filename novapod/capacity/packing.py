"""Packing the jobs of one training plan side by side in time: pure functions, no AWS.

A plan reserves `instance_count` instances for `duration_hours` (whole days). Its jobs
run side by side when the instances suffice, each after the jobs it waits for (`after`,
`from: job:`), and none past the plan's end. `pack` chooses the plan's shape (a count
plans sell and whole days) that reserves the fewest instance-hours, ties broken toward
fewer instances, and the schedule: each job's start hour. Jobs start on whole hours and
hold their instances for their hours rounded up to whole hours.

How, and why so. A plan's name is a digest of its count and duration (capacity.naming),
and a name is a purchase: the same jobs must give the same shape on every machine.
1. Per candidate count: a lower bound on the hours (the longest chain of `after`, the
   jobs' instance-hours over the count, the jobs too wide to run two at a time) and
   greedy schedules (serial schedule generation under a few fixed priority rules, each
   improved by double justification; integer arithmetic only). When a greedy
   schedule's whole days meet the bound, that count's days are proven; most plans end
   here, without the solver.
2. Otherwise OR-Tools CP-SAT (architecture.md: scheduling is delegated to a maintained
   solver) looks for fewer days. Its maintainers say it is deterministic with one worker
   and not across versions (google/or-tools#1145), and that a wall-clock limit is never
   deterministic (google/or-tools#4195): so one worker, a fixed seed, a limit in
   deterministic time (work counted, not seconds; sat_parameters.proto
   max_deterministic_time) and an exact pin of ortools in pyproject.toml. A proven
   optimum is a value, the same whatever path the search took (OR-Tools does not
   promise the same search on another CPU or operating system; a proven shape does not
   need it); a count whose days are not proven within the limit keeps what was found,
   and the plan carries the gap to its proven lower bound (`lower_bound_instance_hours`).
3. A final left shift (pure Python) moves each job as early as the others allow, rather
   than wherever the solver left it within the days.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

HOURS_PER_DAY = 24
# CP-SAT settings (see the module docstring). The limit is deterministic time, whose
# unit approximates a second of one core's work, per solve: plans of a few tens of jobs
# are settled within it (benchmarks/plan_time.py), larger ones stop there with a gap.
SOLVER_SEED = 20260301
SOLVER_DETERMINISTIC_LIMIT = 0.25


@dataclass(frozen=True)
class Task:
    """One job to place: its instances, its whole hours and the jobs it waits for."""

    name: str
    instance_count: int
    hours: int
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Slot:
    """Where a job runs in its plan: hours from the plan's start."""

    job: str
    start_hour: int
    end_hour: int
    instance_count: int


@dataclass(frozen=True)
class Packing:
    """A plan's shape and schedule; `lower_bound_instance_hours` is proven: no allowed
    shape reserves fewer (equal to the shape's reserved hours when it is optimal)."""

    instance_count: int
    duration_hours: int
    slots: tuple[Slot, ...]
    lower_bound_instance_hours: int

    @property
    def reserved_instance_hours(self) -> int:
        return self.instance_count * self.duration_hours

    @property
    def proven(self) -> bool:
        return self.reserved_instance_hours == self.lower_bound_instance_hours


def whole_days(hours: int) -> int:
    """Hours rounded up to whole days, at least one."""
    return max(1, math.ceil(hours / HOURS_PER_DAY))


# --------------------------------------------------------------------------- bounds


def dependency_order(items: Sequence[tuple[str, Sequence[str]]]) -> list[int]:
    """Indexes of (name, waits for) items, each after those it waits for that are
    listed; ties in list order. ValueError naming them when some wait in a cycle."""
    index = {name: i for i, (name, _) in enumerate(items)}
    preds = [[index[p] for p in after if p in index] for _, after in items]
    done: set[int] = set()
    order: list[int] = []
    while len(order) < len(items):
        ready = [i for i in range(len(items)) if i not in done and all(p in done for p in preds[i])]
        if not ready:
            stuck = ", ".join(name for i, (name, _) in enumerate(items) if i not in done)
            raise ValueError(f"jobs {stuck} wait for each other in a cycle")
        order.extend(ready)
        done.update(ready)
    return order


def _topological(tasks: Sequence[Task]) -> list[int]:
    return dependency_order([(task.name, task.after) for task in tasks])


def _predecessors(tasks: Sequence[Task]) -> list[list[int]]:
    index = {task.name: i for i, task in enumerate(tasks)}
    return [sorted({index[p] for p in task.after if p in index}) for task in tasks]


def _tails(tasks: Sequence[Task], preds: list[list[int]], order: list[int]) -> list[int]:
    """Each task's hours plus the longest chain of tasks waiting for it."""
    tails = [task.hours for task in tasks]
    for i in reversed(order):
        for p in preds[i]:
            tails[p] = max(tails[p], tasks[p].hours + tails[i])
    return tails


def lower_bound_hours(tasks: Sequence[Task], count: int) -> int:
    """Hours no schedule on `count` instances can beat: the longest chain, the area over
    the count, and the jobs wider than half the count (no two of them run at a time)."""
    preds = _predecessors(tasks)
    chain = max(_tails(tasks, preds, _topological(tasks)), default=0)
    area = math.ceil(sum(t.instance_count * t.hours for t in tasks) / count)
    wide = sum(t.hours for t in tasks if 2 * t.instance_count > count)
    return max(chain, area, wide)


# --------------------------------------------------------------------------- greedy


class _Profile:
    """Instances in use over time: a step function, usage[i] on [times[i], times[i+1])."""

    def __init__(self) -> None:
        self.times = [0]
        self.usage = [0]

    def earliest(self, ready: int, hours: int, width: int, capacity: int) -> int:
        """The earliest start >= ready where `width` more instances fit for `hours`."""
        start = ready
        i = bisect_right(self.times, start) - 1
        while True:
            j = i
            fits = True
            while j < len(self.times) and self.times[j] < start + hours:
                if self.usage[j] + width > capacity:
                    # The last segment is idle and every task fits the count alone.
                    start = self.times[j + 1]
                    i = j + 1
                    fits = False
                    break
                j += 1
            if fits:
                return start

    def _split(self, at: int) -> int:
        i = bisect_right(self.times, at) - 1
        if self.times[i] == at:
            return i
        self.times.insert(i + 1, at)
        self.usage.insert(i + 1, self.usage[i])
        return i + 1

    def add(self, start: int, end: int, width: int) -> None:
        first, last = self._split(start), self._split(end)
        for k in range(first, last):
            self.usage[k] += width


def _serial(
    tasks: Sequence[Task], preds: list[list[int]], count: int, key: Callable[[int], tuple[int, ...]]
) -> list[int]:
    """Serial schedule generation: repeatedly place the ready task first by `key` at the
    earliest hour its predecessors and the free instances allow. Returns start hours."""
    starts = [-1] * len(tasks)
    profile = _Profile()
    pending = set(range(len(tasks)))
    while pending:
        ready = [i for i in pending if all(starts[p] >= 0 for p in preds[i])]
        i = min(ready, key=key)
        earliest = max((starts[p] + tasks[p].hours for p in preds[i]), default=0)
        task = tasks[i]
        starts[i] = profile.earliest(earliest, task.hours, task.instance_count, count)
        profile.add(starts[i], starts[i] + task.hours, task.instance_count)
        pending.remove(i)
    return starts


def _greedy(tasks: Sequence[Task], count: int) -> list[int]:
    """The shortest of a few fixed-rule greedy schedules (ties: the first rule)."""
    preds = _predecessors(tasks)
    tails = _tails(tasks, preds, _topological(tasks))
    rules: tuple[Callable[[int], tuple[int, ...]], ...] = (
        lambda i: (-tails[i], -tasks[i].instance_count, i),
        lambda i: (-tasks[i].instance_count * tasks[i].hours, i),
        lambda i: (-tasks[i].instance_count, -tasks[i].hours, i),
        lambda i: (-tasks[i].hours, -tasks[i].instance_count, i),
        lambda i: (i,),
    )
    best: list[int] | None = None
    best_end = 0
    for rule in rules:
        starts = _justified(tasks, preds, count, _serial(tasks, preds, count, rule))
        end = _makespan(tasks, starts)
        if best is None or end < best_end:
            best, best_end = starts, end
    assert best is not None
    return best


def _justified(
    tasks: Sequence[Task], preds: list[list[int]], count: int, starts: list[int]
) -> list[int]:
    """Double justification (Valls et al., 2005): schedule backwards from the end, latest
    first, then forwards again, earliest first, while that shortens the schedule. It
    closes most gaps a single greedy pass leaves."""
    succs: list[list[int]] = [[] for _ in tasks]
    for i, before in enumerate(preds):
        for p in before:
            succs[p].append(i)
    best, best_end = starts, _makespan(tasks, starts)
    for _ in range(4):  # each round strictly shortens, or we stop
        ends = [s + t.hours for s, t in zip(best, tasks, strict=True)]
        late = _serial(tasks, succs, count, lambda i: (-ends[i], i))  # noqa: B023
        span = _makespan(tasks, late)
        back = [span - s - t.hours for s, t in zip(late, tasks, strict=True)]
        forward = _serial(tasks, preds, count, lambda i: (back[i], i))  # noqa: B023
        end = _makespan(tasks, forward)
        if end >= best_end:
            break
        best, best_end = forward, end
    return best


def _makespan(tasks: Sequence[Task], starts: Sequence[int]) -> int:
    return max((s + t.hours for s, t in zip(starts, tasks, strict=True)), default=0)


def left_shift(tasks: Sequence[Task], starts: Sequence[int], count: int) -> list[int]:
    """Move each task, earliest first, to the earliest hour its predecessors and the
    others' instances allow; never later than it was, so the schedule stays valid."""
    preds = _predecessors(tasks)
    result = list(starts)
    for i in sorted(range(len(tasks)), key=lambda k: (result[k], k)):
        profile = _Profile()
        for k, task in enumerate(tasks):
            if k != i:
                profile.add(result[k], result[k] + task.hours, task.instance_count)
        ready = max((result[p] + tasks[p].hours for p in preds[i]), default=0)
        task = tasks[i]
        result[i] = min(result[i], profile.earliest(ready, task.hours, task.instance_count, count))
    return result


# --------------------------------------------------------------------------- solver


@dataclass(frozen=True)
class _Solved:
    starts: list[int] | None  # None: no schedule within the days asked for was found
    days_bound: int  # proven: no schedule on this count takes fewer days


def _solve(tasks: Sequence[Task], count: int, low_days: int, high_days: int) -> _Solved:
    """The fewest days in [low_days, high_days] on `count` instances, by CP-SAT. (The
    greedy schedules are no hint: they take more days than asked for.)"""
    # Imported here: most plans are proven by the greedy schedules, and synthesis should
    # not pay for loading the solver (about 0.4 s) when it is not needed.
    from ortools.sat.python import cp_model  # noqa: PLC0415

    model = cp_model.CpModel()
    horizon = HOURS_PER_DAY * high_days
    days = model.new_int_var(low_days, high_days, "days")
    starts = []
    intervals = []
    for i, task in enumerate(tasks):
        start = model.new_int_var(0, horizon - task.hours, f"start{i}")
        intervals.append(model.new_fixed_size_interval_var(start, task.hours, f"job{i}"))
        model.add(start + task.hours <= HOURS_PER_DAY * days)
        starts.append(start)
    model.add_cumulative(intervals, [task.instance_count for task in tasks], count)
    for i, before in enumerate(_predecessors(tasks)):
        for p in before:
            model.add(starts[i] >= starts[p] + tasks[p].hours)
    model.minimize(days)

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SOLVER_SEED
    solver.parameters.max_deterministic_time = SOLVER_DETERMINISTIC_LIMIT
    status = solver.solve(model)
    if status == cp_model.OPTIMAL:
        found = [int(solver.value(s)) for s in starts]
        return _Solved(found, int(solver.value(days)))
    if status == cp_model.FEASIBLE:
        found = [int(solver.value(s)) for s in starts]
        return _Solved(found, max(low_days, math.ceil(solver.best_objective_bound)))
    if status == cp_model.INFEASIBLE:
        return _Solved(None, high_days + 1)
    return _Solved(None, low_days)  # the limit ran out before any schedule was found


# --------------------------------------------------------------------------- shapes


@dataclass(frozen=True)
class _Candidate:
    count: int
    days: int
    starts: list[int]

    def key(self) -> tuple[int, int]:
        """Fewer reserved instance-hours first, then fewer instances."""
        return (self.count * self.days, self.count)


def pack(
    tasks: Sequence[Task],
    counts: Sequence[int],
    *,
    days: int | None = None,
    max_days: int | None = None,
    solver: bool = True,
) -> Packing | None:
    """The shape reserving the fewest instance-hours, ties toward fewer instances.

    `counts`: the counts allowed, each at least the widest task. `days`: the duration
    when the config fixes it (then: the fewest instances that hold the tasks in it).
    `max_days`: the longest plan allowed. `solver`: False keeps to the greedy schedules
    (a quick upper bound). None when no allowed shape holds the tasks.
    """
    ordered = tuple(sorted(set(counts)))
    if days is not None:
        return _pack_in(tuple(tasks), ordered, days, solver)
    return _pack_free(tuple(tasks), ordered, max_days, solver)


def clear_cache() -> None:
    """Forget the packings kept by `pack` (tests pack anew)."""
    _pack_free.cache_clear()
    _pack_in.cache_clear()


# Kept: synthesis and `novapod plan` ask for the same plans several times, and the split
# search for the same groups of jobs.
@lru_cache(maxsize=4096)
def _pack_free(
    tasks: tuple[Task, ...], counts: tuple[int, ...], max_days: int | None, solver: bool
) -> Packing | None:
    if not tasks or not counts:
        return None
    lows = {count: whole_days(lower_bound_hours(tasks, count)) for count in counts}
    bounds = dict(lows)  # per count: proven fewest days
    chain_days = min(lows.values())  # no count beats the longest chain
    best: _Candidate | None = None
    for count in counts:
        if best is not None and (count * chain_days, count) >= best.key():
            break  # this count and every larger one reserve more than the best
        starts = _greedy(tasks, count)
        found = whole_days(_makespan(tasks, starts))
        if max_days is None or found <= max_days:
            candidate = _Candidate(count, found, starts)
            if best is None or candidate.key() < best.key():
                best = candidate
        if found == lows[count] or not solver:
            continue  # proven by the bound, or no solver asked for
        # Fewer days than found, within the cap, and beating the best so far.
        high = found - 1 if max_days is None else min(found - 1, max_days)
        if best is not None:
            high = min(high, _most_days_beating(best, count))
        if high < lows[count]:
            continue
        solved = _solve(tasks, count, lows[count], high)
        bounds[count] = max(bounds[count], min(solved.days_bound, found))
        if solved.starts is not None:
            solved_days = whole_days(_makespan(tasks, solved.starts))
            candidate = _Candidate(count, solved_days, solved.starts)
            if best is None or candidate.key() < best.key():
                best = candidate
    if best is None:
        return None
    lower = min(count * bound for count, bound in bounds.items()) * HOURS_PER_DAY
    return _packing(tasks, best, lower)


@lru_cache(maxsize=4096)
def _pack_in(
    tasks: tuple[Task, ...], counts: tuple[int, ...], days: int, solver: bool
) -> Packing | None:
    if not tasks or not counts:
        return None
    possible = []  # counts not proven too few for `days`
    best: _Candidate | None = None
    for count in counts:
        low = whole_days(lower_bound_hours(tasks, count))
        if low > days:
            continue
        possible.append(count)
        starts = _greedy(tasks, count)
        if whole_days(_makespan(tasks, starts)) <= days:
            best = _Candidate(count, days, starts)
            break
        if not solver:
            continue
        solved = _solve(tasks, count, low, days)
        if solved.starts is not None:
            best = _Candidate(count, days, solved.starts)
            break
        if solved.days_bound > days:
            possible.pop()  # proven: this count cannot hold the tasks in `days`
    if best is None:
        return None
    return _packing(tasks, best, min(possible) * days * HOURS_PER_DAY)


def _packing(tasks: tuple[Task, ...], best: _Candidate, lower: int) -> Packing:
    starts = left_shift(tasks, best.starts, best.count)
    slots = tuple(
        Slot(task.name, start, start + task.hours, task.instance_count)
        for task, start in zip(tasks, starts, strict=True)
    )
    reserved = best.count * best.days * HOURS_PER_DAY
    return Packing(best.count, best.days * HOURS_PER_DAY, slots, min(lower, reserved))


def _most_days_beating(best: _Candidate, count: int) -> int:
    """The most days on `count` instances that reserve less than `best` (or as much,
    with fewer instances)."""
    best_days = best.count * best.days
    if count < best.count:
        return best_days // count
    return (best_days - 1) // count


# --------------------------------------------------------------------------- splits


def split_plan(
    tasks: Sequence[Task],
    counts: Sequence[int],
    *,
    max_days: int | None = None,
    max_parts: int = 4,
) -> tuple[Packing, ...] | None:
    """Plans (two to `max_parts`) that together reserve fewer instance-hours than one
    plan for all `tasks` (shaped by `pack`), or None when no split found does.

    Jobs that wait for each other stay in one plan: plans start when their offerings
    do, so an order across plans could not be kept. The search is greedy and
    deterministic: each group of jobs alone, and cuts of the groups sorted by width,
    hours and instance-hours, then single moves between the two sides while they help,
    then the same for each side; shapes are compared by the greedy schedules, and the
    result is packed with the solver. `counts`: every count plans sell.
    """
    whole = pack(tasks, _counts_for(tasks, counts), max_days=max_days)
    if whole is None:
        return None
    units = linked_groups(tasks)
    if len(units) < 2:
        return None
    parts = _refine([list(range(len(units)))], units, counts, max_days, max_parts)
    if len(parts) < 2:
        return None
    packed = []
    for part in parts:
        members = _members(part, units)
        found = pack(members, _counts_for(members, counts), max_days=max_days)
        if found is None:
            return None
        packed.append(found)
    if sum(p.reserved_instance_hours for p in packed) >= whole.reserved_instance_hours:
        return None
    return tuple(packed)


def linked_groups(tasks: Sequence[Task]) -> list[tuple[Task, ...]]:
    """Tasks linked by `after` (either way), in task order: they share a plan."""
    preds = _predecessors(tasks)
    group = list(range(len(tasks)))

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    for i, before in enumerate(preds):
        for p in before:
            a, b = sorted((root(i), root(p)))
            group[b] = a
    units: dict[int, list[Task]] = {}
    for i, task in enumerate(tasks):
        units.setdefault(root(i), []).append(task)
    return [tuple(members) for members in units.values()]


def _members(part: Sequence[int], units: Sequence[tuple[Task, ...]]) -> tuple[Task, ...]:
    """The tasks of a part, in task order (units keep theirs; parts list units sorted)."""
    return tuple(task for u in sorted(part) for task in units[u])


def _counts_for(tasks: Sequence[Task], counts: Sequence[int]) -> tuple[int, ...]:
    widest = max((task.instance_count for task in tasks), default=1)
    return tuple(count for count in counts if count >= widest)


def _quick(
    part: Sequence[int],
    units: Sequence[tuple[Task, ...]],
    counts: Sequence[int],
    max_days: int | None,
) -> float:
    """A part's reserved instance-hours by the greedy schedules (an upper bound: the
    chosen split is packed with the solver at the end)."""
    members = _members(part, units)
    found = pack(members, _counts_for(members, counts), max_days=max_days, solver=False)
    return math.inf if found is None else found.reserved_instance_hours


def _refine(
    parts: list[list[int]],
    units: Sequence[tuple[Task, ...]],
    counts: Sequence[int],
    max_days: int | None,
    max_parts: int,
) -> list[list[int]]:
    """Split parts in two while it lowers the quick cost and parts are fewer than allowed."""
    changed = True
    while changed and len(parts) < max_parts:
        changed = False
        for k, part in enumerate(parts):
            halves = _halve(part, units, counts, max_days)
            if halves is not None:
                parts = [*parts[:k], *halves, *parts[k + 1 :]]
                changed = True
                break
    return parts


def _halve(
    part: list[int],
    units: Sequence[tuple[Task, ...]],
    counts: Sequence[int],
    max_days: int | None,
) -> list[list[int]] | None:
    """The best two-way split of `part` found, if it costs less than `part` whole."""
    if len(part) < 2:
        return None

    def cost(a: Sequence[int], b: Sequence[int]) -> float:
        return _quick(a, units, counts, max_days) + _quick(b, units, counts, max_days)

    def width(u: int) -> int:
        return max(t.instance_count for t in units[u])

    def hours(u: int) -> int:
        return lower_bound_hours(units[u], width(u))

    def area(u: int) -> int:
        return sum(t.instance_count * t.hours for t in units[u])

    candidates = [([u], [x for x in part if x != u]) for u in part]  # each group alone
    for key in (width, hours, area):
        ranked = sorted(part, key=lambda u: (-key(u), u))
        candidates += [
            (sorted(ranked[:cut]), sorted(ranked[cut:])) for cut in range(1, len(ranked))
        ]
    best: tuple[float, list[int], list[int]] | None = None
    for a, b in candidates:
        c = cost(a, b)
        if best is None or c < best[0]:
            best = (c, a, b)
    assert best is not None
    total, a, b = best
    improved = True
    while improved:  # single moves while they help; each strictly lowers the cost
        improved = False
        for u in sorted(part):
            source, target = (a, b) if u in a else (b, a)
            if len(source) == 1:
                continue
            rest, grown = [x for x in source if x != u], sorted([*target, u])
            new_a, new_b = (rest, grown) if source is a else (grown, rest)
            c = cost(new_a, new_b)
            if c < total:
                total, a, b = c, new_a, new_b
                improved = True
    if total >= _quick(part, units, counts, max_days):
        return None
    return [a, b]
