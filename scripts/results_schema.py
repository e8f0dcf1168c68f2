"""Generate docs/results-schema.json, the JSON Schema of ``results.json``, from the records of
:mod:`duet_bench.results` (the document, benchmarks, runs, sides) and of
:mod:`duet_bench.results.analysis` (the analysis block); checked by
tests/duet/test_results_schema.py, which also validates every fixture and golden results file.

Run: .venv/bin/python scripts/results_schema.py > docs/results-schema.json

Each field's JSON type comes from its annotation. What the annotations do not say is in
:data:`SHAPES`: which fields a reader requires, where an unknown field is refused (runs and sides:
a typo there would change a result; elsewhere it is ignored with a warning), the value sets of
``status`` and ``method``, and the analysis records whose JSON differs from their fields.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, Union

from duet_bench.results import analysis as block
from duet_bench.results.model import (
    METHODS,
    READABLE_VERSIONS,
    RUN_STATUSES,
    SCHEMA_FAMILY,
    SIDE_SERIES,
    BenchmarkRecord,
    ResultsDocument,
    RunRecord,
    SideRecord,
)

JSON = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Shape:
    """How a record's JSON object differs from what its fields' annotations say."""

    required: tuple[str, ...] = ()
    #: Unknown fields refused (runs and sides) rather than ignored.
    closed: bool = False
    #: Fields that are not in the JSON (``absent``) or stand under another key.
    skip: tuple[str, ...] = ()
    fields: Mapping[str, JSON] = dataclasses.field(default_factory=dict)


def _samples(minimum: int | None) -> JSON:
    items: JSON = {"type": "integer"}
    if minimum is not None:
        items["minimum"] = minimum
    return {"type": "array", "items": items}


def _impact() -> JSON:
    return {
        "anyOf": [
            {"type": "null"},
            {
                "type": "object",
                "properties": {
                    "plain": {"type": ["number", "null"]},
                    "transformed": {"type": ["number", "null"]},
                },
                "required": ["plain"],
            },
            {
                "type": "object",
                "properties": {"missing": {"type": ["string", "null"]}},
                "required": ["missing"],
            },
        ]
    }


SHAPES: dict[type, Shape] = {
    ResultsDocument: Shape(
        required=("schema", "benchmarks"),
        fields={
            "schema": {
                "type": "string",
                "pattern": f"^{SCHEMA_FAMILY}/[0-9]+$",
                "description": f"readable versions: {', '.join(map(str, READABLE_VERSIONS))}",
            }
        },
    ),
    # ``settings`` (the recorded plan, :class:`duet_bench.results.plan.RecordedPlan`): an object
    # whose keys a newer duet may extend; its reader checks the types of the keys it knows.
    BenchmarkRecord: Shape(
        required=("name", "runs"),
        fields={"method": {"enum": list(METHODS)}, "settings": {"type": "object"}},
    ),
    RunRecord: Shape(
        required=("index", "status", "baseline", "candidate"),
        closed=True,
        fields={"index": {"type": "integer", "minimum": 0}, "status": {"enum": list(RUN_STATUSES)}},
    ),
    SideRecord: Shape(
        required=("iterations_ns",),
        closed=True,
        fields={
            "iterations_ns": _samples(1),
            "warmup_ns": _samples(1),
            **{k: {"anyOf": [_samples(0), {"type": "null"}]} for k in SIDE_SERIES},
            "status": {"enum": list(RUN_STATUSES)},
        },
    ),
    block.AnalysisBlock: Shape(
        skip=("absent", "impact_baseline", "impact_candidate"),
        fields={
            "impact_factor": {
                "type": "object",
                "properties": {"baseline": _impact(), "candidate": _impact()},
            }
        },
    ),
}


def _record_name(cls: type) -> str:
    return cls.__name__


def type_schema(tp: Any, defs: dict[str, JSON]) -> JSON:
    """The JSON Schema of one annotation."""
    origin = typing.get_origin(tp)
    if tp is type(None):
        return {"type": "null"}
    if tp is Any:
        return {}
    if origin in (Union, types.UnionType):
        parts = [type_schema(a, defs) for a in typing.get_args(tp)]
        simple = [p["type"] for p in parts if set(p) == {"type"} and isinstance(p["type"], str)]
        if len(simple) == len(parts):
            return {"type": simple}
        return {"anyOf": parts}
    if origin is Literal:
        return {"enum": list(typing.get_args(tp))}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": type_schema(args[0], defs)}
        items = [type_schema(a, defs) for a in args]
        return {
            "type": "array",
            "prefixItems": items,
            "minItems": len(items),
            "maxItems": len(items),
        }
    if origin in (Mapping, dict) or tp in (Mapping, dict):
        args = typing.get_args(tp)
        value = type_schema(args[1], defs) if args else {}
        return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        name = _record_name(tp)
        if name not in defs:
            defs[name] = {}  # taken before the recursion: records do not nest themselves
            defs[name] = record_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for the annotation {tp!r}")


def record_schema(cls: type, defs: dict[str, JSON]) -> JSON:
    """The JSON Schema of one record: its fields' annotations, with :data:`SHAPES` applied."""
    shape = SHAPES.get(cls, Shape())
    hints = typing.get_type_hints(cls)
    props: JSON = {}
    for f in dataclasses.fields(cls):
        if f.name in shape.skip:
            continue
        props[f.name] = shape.fields.get(f.name) or type_schema(hints[f.name], defs)
    props.update({k: v for k, v in shape.fields.items() if k not in props})
    out: JSON = {"type": "object", "properties": props}
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    if doc:
        out = {"description": " ".join(doc.split()), **out}
    if shape.required:
        out["required"] = list(shape.required)
    if shape.closed:
        out["additionalProperties"] = False
    return out


def _metric_block(defs: dict[str, JSON]) -> None:
    """``analysis.metrics.<name>``: the figures, or ``{"missing": reason}`` alone."""
    figures = defs["MetricBlock"]
    figures["properties"].pop("missing")
    defs["MetricBlock"] = {
        "description": figures.pop("description"),
        "anyOf": [
            figures,
            {
                "type": "object",
                "properties": {"missing": {"type": "string"}},
                "required": ["missing"],
                "additionalProperties": False,
            },
        ],
    }


def schema() -> JSON:
    defs: dict[str, JSON] = {}
    top = record_schema(ResultsDocument, defs)
    _metric_block(defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "duet results document (results.json)",
        **top,
        "$defs": dict(sorted(defs.items())),
    }


def render() -> str:
    return json.dumps(schema(), indent=2) + "\n"


if __name__ == "__main__":
    print(render(), end="")
