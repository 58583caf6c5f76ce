"""A gradient's provenance and a case's information are typed fields, held in files as the
flat mappings `extra` and `info` they always were (docs/reference/model.md, "A gradient's
provenance"): each mapping, as a file holds it, reads into the fields and is written back
the same, key for key and in order; a value of the wrong kind is refused on reading; a
file's own attributes stay as they are.
"""

from __future__ import annotations

import pytest

from weanj._judge._information import (
    CentralDifferences,
    DeviceComparison,
    Masked,
    information_fields,
    information_json,
)
from weanj._judge._verdict import CaseJudgement
from weanj._model import DeviceProvenance, Distributed, Place
from weanj._model._provenance import provenance_fields, provenance_json
from weanj._model._verdicts import CaseKind, Verdict
from weanj._x64 import X64

# a device run reused from its record, as `check.json` holds its subject's `extra`
DEVICE_RUN = {
    "device": "tpu",
    "device_kind": "stand-in tpu (CPU device 1)",
    "precision": "default of the stand-in tpu: BF16_BF16_F32",
    "precision_reduced": True,
    "standin": True,
    "reused": "2026-01-02T03:04:05+00:00",
    "precision_level": {"loss": 1e-3, "x": 2e-4},
}


class _Fields:
    """The provenance fields of a `Gradient`, alone (no arrays needed to hold them)."""

    def __init__(self, **fields):
        self.device = self.precision_level = self.x64 = None
        self.reused = self.distributed = None
        self.attributes = {}
        self.__dict__.update(fields)


def test_a_device_runs_extra_reads_into_fields_and_back_key_for_key():
    fields = provenance_fields(DEVICE_RUN)
    assert fields["device"] == DeviceProvenance(
        "tpu",
        "stand-in tpu (CPU device 1)",
        "default of the stand-in tpu: BF16_BF16_F32",
        True,
        software="",
        standin=True,
    )
    assert fields["reused"] == "2026-01-02T03:04:05+00:00"
    assert fields["precision_level"] == {"loss": 1e-3, "x": 2e-4}
    assert fields["attributes"] == {}
    written = provenance_json(_Fields(**fields))
    assert list(written.items()) == list(DEVICE_RUN.items())  # the same keys, in order


def test_a_processes_run_and_a_files_own_attributes():
    extra = {"note": "mine", "x64": "x64 on (JAX's default)", "processes": 2, "devices": 4}
    fields = provenance_fields(extra)
    assert fields["distributed"] == Distributed(processes=2, devices=4)
    assert fields["attributes"] == {"note": "mine"}  # not weanj's: kept as the file has it
    assert fields["x64"] == "x64 on (JAX's default)" and "device" not in fields
    assert list(provenance_json(_Fields(**fields)).items()) == list(extra.items())


@pytest.mark.parametrize(
    "extra",
    [
        {**DEVICE_RUN, "precision_reduced": "yes"},
        {**DEVICE_RUN, "device_kind": 3},
        {"x64": True},
        {"processes": 2, "devices": "four"},
        {"precision_level": {"loss": "small"}},
    ],
)
def test_a_provenance_value_of_another_kind_is_refused(extra):
    with pytest.raises(ValueError):
        provenance_fields(extra)


def test_a_cases_information_reads_into_fields_and_back():
    info = {
        "masked": {"left_out": 452, "size": 8192, "why": "entries within h of a kink"},
        "fd": {"error": 6.5e-08, "step": 1e-4, "threshold": 1e-6},
    }
    fields = information_fields(info)
    assert fields == {
        "masked": Masked(452, 8192, "entries within h of a kink"),
        "fd": CentralDifferences(6.5e-08, 1e-4, 1e-6),
    }
    assert not fields["fd"].above and CentralDifferences(2e-6, 1e-4, 1e-6).above
    j = CaseJudgement("e::f::v::taylor", CaseKind.TAYLOR, Verdict.OK, **fields)
    assert j.info == info and information_json(j) == info
    run = CaseJudgement("e::f::v::run", CaseKind.RUN, Verdict.OK, x64=X64(True, "mine"))
    assert run.info == {"x64": {"enabled": True, "source": "mine"}}
    assert information_fields(run.info) == {"x64": X64(True, "mine")}


def test_a_device_pairs_information_keeps_its_rerun_only_where_there_was_one():
    plain = DeviceComparison("tpu", "TPU v5 lite", "default", False)
    assert list(plain.to_json()) == ["kind", "device", "precision", "standin"]
    failed = DeviceComparison("tpu", "TPU v5 lite", "default", False, "ok", "precision")
    data = failed.to_json()
    assert list(data)[-2:] == ["highest", "precision_or_bug"]
    assert DeviceComparison.from_json(data) == failed
    assert information_fields({"device": plain.to_json()}) == {"device": plain}


@pytest.mark.parametrize(
    "info",
    [
        {"masked": 5},
        {"masked": {"left_out": 1, "size": 2}},
        {"fd": {"error": "small", "step": 1e-4, "threshold": 1e-6}},
        {"x64": {"enabled": "yes", "source": "mine"}},
        {"device": {"kind": "tpu"}},
        {"notes": {}},
    ],
)
def test_information_of_another_kind_is_refused(info):
    with pytest.raises(ValueError):
        information_fields(info)


def test_the_jax_place_is_a_place():
    """What the pipeline reads of a device (`_model.Place`) the JAX backend's place has."""
    from weanj._backends._placement import place_of

    place = place_of("cpu")
    read: Place = place
    assert (read.kind, read.description, read.software, read.standin) == ("cpu", "cpu", "", False)
    assert read.precision("float32") == ("default (full float32 on the CPU)", False)
    assert read.precision("float32", "bfloat16") == ("bfloat16", False)  # the CPU: full
